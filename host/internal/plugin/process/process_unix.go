//go:build unix && !linux

package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// killTree kills the plugin's process group.
func killTree(p *os.Process, _ bool) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}

// startSandboxed starts the plugin in its own process group, so a kill
// reaches whatever it spawned (unless that left the group). There is no
// OS isolation here: it is implemented for Linux only.
func startSandboxed(_ context.Context, l *launch, stdout, stderr *os.File, _ <-chan struct{}) (*started, error) {
	cmd := &exec.Cmd{Path: l.path, Args: []string{l.path}, Env: l.env, Dir: filepath.Dir(l.path), Stdout: stdout, Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &started{cmd: cmd, report: unisolated(l)}, nil
}

// vetAddress accepts only a socket file directly in the socket
// directory, not a symlink. Unlike on Linux, the plugin could still swap
// it before the host connects.
func vetAddress(network, addr, socketDir string) (string, io.Closer, error) {
	if err := inSocketDir(network, addr, socketDir); err != nil {
		return "", nil, err
	}
	st, err := os.Lstat(addr)
	if err != nil {
		return "", nil, err
	}
	if st.Mode()&os.ModeSocket == 0 {
		return "", nil, fmt.Errorf("not a socket file (%s)", st.Mode().Type())
	}
	return addr, io.NopCloser(nil), nil
}
