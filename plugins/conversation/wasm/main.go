//go:build wasip1

// Command wasm builds the conversation plugin as a WebAssembly module:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o conversation.wasm ./plugins/conversation/wasm
package main

import (
	"github.com/agentanvil/anvil/plugins/conversation"
	"github.com/agentanvil/anvil/sdk/guest"
)

func init() { guest.Serve(conversation.Plugin()) }

func main() {}
