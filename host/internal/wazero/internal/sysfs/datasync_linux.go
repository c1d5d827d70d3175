package sysfs

import (
	"os"
	"syscall"

	"github.com/agentanvil/anvil/host/internal/wazero/experimental/sys"
)

func datasync(f *os.File) sys.Errno {
	return sys.UnwrapOSError(syscall.Fdatasync(int(f.Fd())))
}
