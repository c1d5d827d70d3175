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
// The first-party kinds linked into a host digest it with their own
// (plugins/geval.SourceDigest and the like): how a kind's config is
// decoded and its calls dispatched is part of what it does, so two builds
// of one version that differ here are told apart.
func Source() fs.FS { return source }
