//go:build !wasip1

package conversation

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
// its prompts included, for the host's identity digest.
func Source() fs.FS { return source }
