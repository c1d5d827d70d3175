//go:build !wasip1

package textmatch

import (
	"embed"
	"io/fs"
)

// source is for hosts: a Wasm guest would carry it as dead weight (the
// linker keeps embedded files), so this file is not built there.
//
//go:embed *.go
var source embed.FS

// Source is this package's Go source as compiled into the running binary,
// for the identity digest of the built-in kinds that use it.
func Source() fs.FS { return source }
