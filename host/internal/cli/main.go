// Package cli is the anvil-host command line: cobra commands over the
// engine, the plugin runtime, the judge cache and the reports. Its one
// entry point is Main; the binary (cmd/anvil-host) and the public host.Main
// call it.
//
// Invariants: every command returns its exit code through exitError (0
// passed, 1 threshold, 2 usage/config/dataset, 3 could not verify, 130
// interrupted); nothing here calls os.Exit. An unknown command, flag or
// help topic, and a command group without its subcommand, is exit 2 with
// the message on stderr. Every command that reads a config finds it by
// findConfig (-c, else $ANVIL_CONFIG, else ./anvil.yaml); --json output
// goes to stdout alone and never changes the exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
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
		Use:   "anvil-host",
		Short: "Run LLM-as-a-judge evaluations with sandboxed metric plugins",
		Long: `Run LLM-as-a-judge evaluations with sandboxed metric plugins.

Start with ` + "`anvil-host init`" + ` (a commented anvil.yaml and a tiny dataset),
then ` + "`anvil-host validate`" + `, ` + "`anvil-host estimate`" + ` and ` + "`anvil-host run`" + `.
` + configRuleHelp,
		Version:       versionString(readBuildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newInitCmd(), newRunCmd(), newEstimateCmd(), newValidateCmd(), newDAGCmd(), newCacheCmd(),
		newPluginCmd(), newVersionCmd())
	root.AddCommand(newCompareCmd(), newCalibrateCmd())
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErr(fmt.Errorf("%s%w (see `%s --help`)", where(cmd), err, cmd.CommandPath()))
	})
	strictGroups(root)
	// A group is runnable only to refuse what it does not know: its usage
	// shows "CMD [command]", not "CMD [flags]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		"{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	return root
}

// strictGroups makes every command that only groups subcommands (the root,
// plugin, cache, dag, completion) refuse what it does not know: an unknown
// subcommand is a usage error (exit 2) naming it, with cobra's
// suggestions, and a bare group prints its help on stderr and exits 2 too.
// A script with a typo, or a variable that expanded to nothing, must never
// pass as if it had run something. Asking for help (--help, help CMD) is
// not an error.
func strictGroups(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		strictGroups(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr(unknownCommand(cmd, args[0]))
		}
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Help()
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		return usageErr(fmt.Errorf("%sname a command (%s)", where(cmd), strings.Join(names, ", ")))
	}
}

// where prefixes a message with the command it is about, below the root
// ("plugin: "); run() prefixes every message with "anvil-host: ".
func where(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": "
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return fmt.Errorf("%s; `%s --help` lists the commands", msg, cmd.CommandPath())
}

// newHelpCmd is cobra's help command, except that an unknown topic is a
// usage error (exit 2), like an unknown command.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return usageErr(err)
			}
			if len(rest) > 0 {
				return usageErr(fmt.Errorf("unknown help topic %q: %s", strings.Join(args, " "), unknownCommand(cmd, rest[0])))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}
