package host

import "github.com/agentanvil/anvil/host/internal/cli"

// Main runs the anvil-host command line with args (without the program
// name) and returns its exit code: 0 passed, 1 a gated metric failed its
// threshold, 2 usage or config error, 3 could not verify, 130 interrupted.
// A program that starts process plugins through this package must call it
// (or MaybeRunTrampoline) first thing in main: the host re-executes its own
// binary as the plugins' sandbox trampoline.
func Main(args []string) int { return cli.Main(args) }
