//go:build wasip1

// Command wasm builds the rag plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o rag.wasm ./plugins/rag/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(rag.Plugin()) }

func main() {}
