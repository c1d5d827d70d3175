//go:build unix && !linux

package plugin

import (
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the plugin in its own process group, so a kill reaches
// whatever it spawned.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killTree kills the plugin's process group.
func killTree(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}

// start starts cmd.
func start(cmd *exec.Cmd, _ <-chan struct{}) error { return cmd.Start() }
