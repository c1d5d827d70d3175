//go:build !wasip1

package rag

import (
	"embed"

	"github.com/agentanvil/anvil/internal/srcdigest"
	"github.com/agentanvil/anvil/sdk"
)

// source is for hosts: a Wasm guest would carry it as dead weight (the
// linker keeps embedded files), so this file is not built there.
//
//go:embed *.go
var source embed.FS

// SourceDigest identifies the code this kind runs with: the digest
// (sha256:<hex>) of this package's Go source as compiled into the running
// binary — its prompts included — and the SDK's (package sdk). A host
// linking the kind in-process compares it with its peers': the version
// alone does not change when a prompt's wording does.
func SourceDigest() string {
	return srcdigest.Of(source, srcdigest.Of(sdk.Source()))
}
