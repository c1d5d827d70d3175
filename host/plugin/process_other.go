//go:build !unix

package plugin

import (
	"os"
	"os/exec"
)

// isolate has nothing portable to add outside Unix: the plugin runs in
// the host's process group.
func isolate(*exec.Cmd) {}

// killTree kills the plugin process (only: without process groups, what it
// spawned survives it).
func killTree(p *os.Process) error { return p.Kill() }

// start starts cmd.
func start(cmd *exec.Cmd, _ <-chan struct{}) error { return cmd.Start() }
