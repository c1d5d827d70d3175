//go:build !unix

package process

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
)

// killTree kills the plugin process (only: without process groups, what it
// spawned survives it).
func killTree(p *os.Process, _ bool) error { return p.Kill() }

// startSandboxed starts the plugin with no OS isolation: it is
// implemented for Linux only.
func startSandboxed(_ context.Context, l *launch, stdout, stderr *os.File, _ <-chan struct{}) (*started, error) {
	cmd := &exec.Cmd{Path: l.path, Args: []string{l.path}, Env: l.env, Dir: filepath.Dir(l.path), Stdout: stdout, Stderr: stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &started{cmd: cmd, report: unisolated(l)}, nil
}

// vetAddress: outside Unix go-plugin serves on TCP, and the host dials
// only the loopback.
func vetAddress(network, addr, _ string) (string, io.Closer, error) {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); network != "tcp" || err != nil || ip == nil || !ip.IsLoopback() {
		return "", nil, fmt.Errorf("the host dials only a TCP address on the loopback here")
	}
	return addr, io.NopCloser(nil), nil
}
