//go:build wasip1

// Command wasm builds the similarity plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o similarity.wasm ./plugins/similarity/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/similarity"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(similarity.Plugin()) }

func main() {}
