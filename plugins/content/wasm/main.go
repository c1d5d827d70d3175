//go:build wasip1

// Command wasm builds the content plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o content.wasm ./plugins/content/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/content"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(content.Plugin()) }

func main() {}
