package process

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// killTree kills the plugin and everything it spawned. In its own PID
// namespace the plugin is PID 1, and the kernel kills the whole
// namespace with it (whatever called setsid included); the kill goes
// through the process handle, which cannot hit a recycled pid. Outside
// one, its process group is what can be reached.
func killTree(p *os.Process, pidNS bool) error {
	if pidNS {
		return p.Kill()
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}

// vetAddress accepts only a socket file directly in the socket
// directory, opened without following a symlink, and returns an address
// naming that very inode (/proc/self/fd/N, which connect resolves to it):
// the plugin cannot swap what the host connects to after the check.
// Close the Closer once nothing dials the address.
func vetAddress(network, addr, socketDir string) (string, io.Closer, error) {
	if err := inSocketDir(network, addr, socketDir); err != nil {
		return "", nil, err
	}
	fd, err := unix.Open(addr, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return "", nil, fmt.Errorf("not a socket file (file type %#o, %v)", st.Mode&unix.S_IFMT, err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd), os.NewFile(uintptr(fd), addr), nil
}
