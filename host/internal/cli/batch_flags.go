package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// batchFlags are run's batch-mode flags (docs/batch.md).
type batchFlags struct {
	batch      bool
	retry      string
	poll       time.Duration
	flushAfter time.Duration
}

func (b *batchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&b.batch, "batch", false, "send judge calls through the providers' batch APIs at the batch price (OpenAI, Azure OpenAI, Anthropic); G-Eval steps and other prepare calls go first, live; a killed run resumed with --resume polls its batches instead of paying twice. Default --concurrency becomes 1000")
	f.StringVar(&b.retry, "batch-retry", "batch", "requests a batch ended without (expired, cancelled, a retryable server error): batch (in a new batch) or live")
	f.DurationVar(&b.poll, "batch-poll", 30*time.Second, "wait between two reads of a batch's status")
	f.DurationVar(&b.flushAfter, "batch-flush", 2*time.Second, "send the waiting judge calls as a batch this long after the first of them (or at 1000 calls)")
	_ = cmd.RegisterFlagCompletionFunc("batch-retry", cobra.FixedCompletions([]string{"batch", "live"}, cobra.ShellCompDirectiveNoFileComp))
}

// options are the engine's batch options, or nil when no judge may batch
// (no --batch: a judge configured with batch: true still batches, with
// these flags' settings).
func (b *batchFlags) options(cmd *cobra.Command) (*engine.BatchOptions, error) {
	if b.retry != "batch" && b.retry != "live" {
		return nil, usageErr(fmt.Errorf("--batch-retry %q: want batch or live", b.retry))
	}
	if b.poll <= 0 || b.flushAfter <= 0 {
		return nil, usageErr(fmt.Errorf("--batch-poll %s, --batch-flush %s: must be positive", b.poll, b.flushAfter))
	}
	if !b.batch {
		for _, name := range []string{"batch-retry", "batch-poll", "batch-flush"} {
			if cmd.Flags().Changed(name) {
				return &engine.BatchOptions{RetryLive: b.retry == "live", PollEvery: b.poll, FlushAfter: b.flushAfter}, nil
			}
		}
		return nil, nil
	}
	return &engine.BatchOptions{All: true, RetryLive: b.retry == "live", PollEvery: b.poll, FlushAfter: b.flushAfter}, nil
}
