//go:build wasip1

// Command wasm builds the dag plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o dag.wasm ./plugins/dag/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(dag.Plugin()) }

func main() {}
