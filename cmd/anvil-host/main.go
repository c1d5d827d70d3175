// Command anvil-host runs LLM-as-a-judge evaluations: it loads metric and
// node kinds (linked, Wasm or native plugins), walks a dataset and writes
// results a person and a CI gate can act on. See `anvil-host --help`.
package main

import (
	"os"

	"github.com/agentanvil/anvil/host"
)

func main() { os.Exit(host.Main(os.Args[1:])) }
