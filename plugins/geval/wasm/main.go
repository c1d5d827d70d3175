//go:build wasip1

// Command wasm builds the geval plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o geval.wasm ./plugins/geval/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(geval.Plugin()) }

func main() {}
