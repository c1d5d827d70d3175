//go:build wasip1

// Command wasm builds the assert plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o assert.wasm ./plugins/assert/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/assert"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(assert.Plugin()) }

func main() {}
