//go:build !wasip1

package judged

import (
	"embed"
	"io/fs"
)

// source is for hosts: a Wasm guest would carry it as dead weight.
//
//go:embed *.go
var source embed.FS

// Source is this package's Go source as compiled into the running binary.
// The kinds built on it digest it with their own: a change to the repair,
// the reason prompt or the verdict parsing changes their identity.
func Source() fs.FS { return source }
