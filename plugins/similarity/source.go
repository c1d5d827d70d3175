//go:build !wasip1

package similarity

import (
	"embed"
	"io/fs"
)

// source is for hosts: a Wasm guest would carry it as dead weight (the
// linker keeps embedded files), so this file is not built there.
//
//go:embed *.go
var source embed.FS

// Source is this package's Go source as compiled into the running binary.
// A host linking the kinds in-process digests it (with the source of the
// packages it depends on) and compares the digest with its peers': the
// version alone does not change when a formula does.
func Source() fs.FS { return source }
