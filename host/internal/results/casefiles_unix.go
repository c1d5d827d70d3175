//go:build unix

package results

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// caseFiles creates the files of cases/ relative to the directory's own
// descriptor, with plain system calls. os.WriteFile would walk the whole
// path for each file and, for every *os.File, try the file on the network
// poller — fcntl to non-blocking, an epoll_ctl that fails for a regular
// file, fcntl back — five system calls a case that do nothing here.
type caseFiles struct {
	dir string
	fd  int
}

func openCaseFiles(dir string) (*caseFiles, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &caseFiles{dir: dir, fd: fd}, nil
}

// write creates (or truncates) name and writes data to it.
func (c *caseFiles) write(name string, data []byte) error {
	fd, err := openat(c.fd, name)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(c.dir, name), err)
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("write %s: %w", filepath.Join(c.dir, name), err)
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close %s: %w", filepath.Join(c.dir, name), err)
	}
	return nil
}

func openat(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func (c *caseFiles) Close() error { return unix.Close(c.fd) }
