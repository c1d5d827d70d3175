package judge

import (
	"context"

	"github.com/agentanvil/anvil/abi"
)

// complete makes one upstream chat completion through the lower layers:
// spend limit → rate limit → concurrency limit → retry → client. Every
// completion, failed or not, is counted in the judge's totals and in u.
func (j *Judge) complete(ctx context.Context, p *plan, c call, u *usage) (completion, *abi.Error) {
	if j.spendLimit > 0 && j.counters.usd() >= j.spendLimit {
		return completion{}, j.errorf(abi.CodeBudget, false, "spend limit of $%.2f reached ($%.4f spent)", j.spendLimit, j.counters.usd())
	}
	if err := j.pacer.wait(ctx, j.clock, p.estimatedTokens); err != nil {
		return completion{}, j.errorf(abi.CodeJudge, false, "cancelled while waiting for the rate limit: %v", err)
	}
	if err := j.slots.acquire(ctx); err != nil {
		return completion{}, j.errorf(abi.CodeJudge, false, "cancelled while waiting for a free connection: %v", err)
	}
	comp, attempts, f := j.withRetry(ctx, p.params(j.cfg.Model, c))
	j.slots.release()

	j.counters.calls.Add(1)
	j.counters.attempts.Add(int64(attempts))
	if f != nil {
		u.add(0, 0, attempts)
		return completion{}, j.failureError(f, attempts)
	}
	u.add(comp.inputTokens, comp.outputTokens, attempts)
	j.counters.inputTokens.Add(int64(comp.inputTokens))
	j.counters.outputTokens.Add(int64(comp.outputTokens))
	j.counters.addUSD(j.Price(comp.inputTokens, comp.outputTokens))
	return comp, nil
}
