//go:build !wasip1

package sdk

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
// A host digests it with the source of each first-party kind it links:
// how a kind's config is decoded and its calls dispatched is part of what
// the kind does, so two builds of one version that differ here are told
// apart.
func Source() fs.FS { return source }
