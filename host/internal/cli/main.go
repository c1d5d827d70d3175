// Package cli is the anvil-host command line: cobra commands over the
// engine, the plugin runtime, the judge cache and the reports. Its one
// entry point is Main; the binary (cmd/anvil-host) and the public host.Main
// call it.
//
// Invariants: every command returns its exit code through exitError (0
// passed, 1 threshold, 2 usage/config/dataset, 3 could not verify, 130
// interrupted); nothing here calls os.Exit.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// Exit codes: a CI gate reads them.
const (
	exitOK          = 0   // every gated metric passed
	exitThreshold   = 1   // a gated metric has a case below its threshold
	exitUsage       = 2   // usage, config or dataset error: nothing evaluated
	exitUnverified  = 3   // could not verify: nothing scored, errors above max_error_rate, empty dataset, judge down, I/O failure
	exitInterrupted = 130 // interrupted (SIGINT/SIGTERM); completed cases are saved
)

// exitCodesHelp is the exit-code paragraph of every command that evaluates.
const exitCodesHelp = `Exit codes: 0 every gated metric passed; 1 a gated metric has a case below
its threshold; 2 usage, config or dataset error (nothing evaluated); 3 could
not verify (a gated metric scored nothing or errored above its
max_error_rate, an empty dataset, a judge that is down, an I/O failure);
130 interrupted. Judge and plugin errors are counted apart from threshold
failures.`

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs the anvil-host command line with args (without the program
// name) and returns its exit code. It first serves as a process plugin's
// sandbox trampoline when this binary was started as one (never
// returning), and makes the process non-dumpable. SIGINT and SIGTERM
// cancel the run (exit 130, completed cases kept).
func Main(args []string) int {
	plugin.MaybeRunTrampoline() // started as a process plugin's sandbox: never returns
	if err := plugin.HardenHost(); err != nil {
		fmt.Fprintln(os.Stderr, "anvil-host: warning:", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args)
}

func run(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitThreshold {
			fmt.Fprintln(os.Stderr, "anvil-host:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "anvil-host:", err)
	return exitUsage
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil-host",
		Short:         "Run LLM-as-a-judge evaluations with sandboxed metric plugins",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newEstimateCmd(), newValidateCmd(), newDAGCmd(), newCacheCmd(), newPluginCmd())
	return root
}
