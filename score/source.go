//go:build !wasip1

package score

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
// A host digests it with the G-Eval kind's own: the rubric and
// normalisation rules here decide its scores, so two builds of one
// version that differ here are told apart.
func Source() fs.FS { return source }
