package plugin

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// isolate puts the plugin in its own process group, so a kill reaches
// whatever it spawned, and has the kernel kill it if the host dies
// without closing it (a crashed host must not leave plugins behind).
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// start starts cmd from a goroutine locked to its OS thread until the
// process has exited: Linux sends the parent-death signal when the
// creating thread ends, not the process (go.dev/issue/27505), and a Go
// thread can end under a goroutine that exits locked to it.
func start(cmd *exec.Cmd, exited <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		errc <- err
		if err == nil {
			<-exited
		}
	}()
	return <-errc
}

// killTree kills the plugin's process group.
func killTree(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}
