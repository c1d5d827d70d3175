//go:build !wasip1

package agent

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
// its prompts included; a host digests it with judged's and the SDK's.
func Source() fs.FS { return source }
