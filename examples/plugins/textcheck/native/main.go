// Command native is the textcheck plugin as a native go-plugin binary (the
// process transport): the same sdk.Plugin as the Wasm module, not sandboxed.
//
//	go build -o textcheck-native ./examples/plugins/textcheck/native
//
// and in the config: transport: process, path and sha256 of the binary.
package main

import (
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/sdk/native"
)

func main() { native.Serve(textcheck.Plugin()) }
