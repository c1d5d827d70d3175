//go:build wasip1

// Command wasm is the textcheck plugin as a sandboxed Wasm module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o textcheck.wasm ./examples/plugins/textcheck/wasm
package main

import (
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(textcheck.Plugin()) }

func main() {}
