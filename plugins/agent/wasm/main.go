//go:build wasip1

// Command wasm builds the agent plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o agent.wasm ./plugins/agent/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(agent.Plugin()) }

func main() {}
