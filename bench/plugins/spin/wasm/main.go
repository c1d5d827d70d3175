//go:build wasip1

// Command wasm is the spin benchmark plugin as a Wasm module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o spin.wasm ./bench/plugins/spin/wasm
package main

import (
	"github.com/agentanvil/anvil/bench/plugins/spin"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(spin.Plugin()) }

func main() {}
