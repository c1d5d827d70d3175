package judge

import (
	"context"

	"github.com/agentanvil/anvil/abi"
)

// complete makes one upstream chat completion through the lower layers:
// breaker → size check → spend limit → rate limit → concurrency limit →
// retry → client. A call refused before sending costs nothing and is not
// counted; every call sent, failed or not, is counted in the judge's totals
// and in u. When the server rejects the structured-output mode, the judge
// weakens it for the rest of the run and the call is made again in the
// weaker mode: the same call, so one call whose rejected sends count only
// as attempts (the server served no completion for them, and counting them
// as calls reported more calls than completions).
func (j *Judge) complete(ctx context.Context, p *plan, c call, u *usage) (completion, *abi.Error) {
	if j.setupErr != nil {
		return completion{}, j.setupErr
	}
	if err := j.unavailable(); err != nil {
		return completion{}, err
	}
	if err := j.checkSize(p, c); err != nil {
		return completion{}, err
	}
	estimate := p.inputTokens + estimateExtra(c.extra) + p.maxTokens
	degraded := false
	for {
		if j.spendLimit > 0 && j.counters.usd() >= j.spendLimit {
			return completion{}, j.errorf(abi.CodeBudget, false, "spend limit of $%.2f reached ($%.4f spent)", j.spendLimit, j.counters.usd())
		}
		// A batched call holds no connection and is not paced: the
		// provider queues it, and the batch's size is the bound.
		batched := j.batcher != nil && batching(ctx)
		release := func() {}
		if !batched {
			var aerr *abi.Error
			release, aerr = j.acquire(ctx, estimate)
			if aerr != nil {
				return completion{}, aerr
			}
		}
		// Requests queued behind the ones that tripped the breaker must
		// not go out.
		if err := j.unavailable(); err != nil {
			release()
			return completion{}, err
		}
		mode := j.sendMode(p.mode)
		body, encErr := j.provider.encode(p, c, mode)
		if encErr != nil {
			release()
			return completion{}, j.errorf(abi.CodeABI, false, "request cannot be encoded: %v", encErr)
		}
		var comp completion
		var attempts int
		var f *failure
		if batched {
			comp, attempts, f = j.batcher.do(ctx, body, p.tokenNeed())
		} else {
			comp, attempts, f = j.withRetry(ctx, body, p.tokenNeed())
		}
		release()

		j.counters.attempts.Add(int64(attempts))
		if f == nil {
			j.counters.calls.Add(1)
			j.trip(ctx, nil, nil)
			j.account(p, c, comp, attempts, u)
			return comp, nil
		}
		err := j.failureError(f, attempts)
		j.trip(ctx, f, err)
		if p.schema != nil && formatRejected(mode, f) {
			// Made again below: these attempts belong to that call.
			u.addAttempts(attempts)
			j.degrade(ctx, mode, f)
			degraded = true
			continue
		}
		j.counters.calls.Add(1)
		u.add(tokens{}, attempts, false)
		if degraded && f.kind == failRejected {
			err.Message += "; the server had already rejected response_format " + string(p.mode) +
				" for this request: if it takes no structured output at all, set supports_json_schema: false (and supports_json_mode: false)"
		}
		return completion{}, err
	}
}

// account counts a completed call. A reply without a usage block is
// counted at the judge's own estimate and marked usage_unknown: unknown is
// not zero, and a server that leaves usage out must not slip under the
// spend limit.
func (j *Judge) account(p *plan, c call, comp completion, attempts int, u *usage) {
	t := tokens{in: comp.inputTokens, cached: comp.cachedInputTokens, written: comp.cacheWriteInputTokens, out: comp.outputTokens}
	if !comp.usageKnown {
		t = tokens{in: p.inputTokens + estimateExtra(c.extra)}
		for _, ch := range comp.choices {
			t.out += estimateReply(ch)
		}
		j.counters.usageUnknown.Add(1)
	}
	u.add(t, attempts, !comp.usageKnown)
	j.counters.inputTokens.Add(int64(t.in))
	j.counters.cachedInputTokens.Add(int64(t.cached))
	j.counters.cacheWriteInputTokens.Add(int64(t.written))
	j.counters.outputTokens.Add(int64(t.out))
	usd := j.cost(t)
	if comp.batched {
		usd *= j.batchDiscount()
	}
	j.counters.addUSD(usd)
	u.mu.Lock()
	u.usd += usd
	u.mu.Unlock()
}

// acquire waits until one call estimated at tokens may start: on the
// judge's own rate limits and connection slots, or on the shared limiter
// that replaces them. It returns the function that ends the call.
func (j *Judge) acquire(ctx context.Context, tokens int) (func(), *abi.Error) {
	if j.limiter != nil {
		release, err := j.limiter.Acquire(ctx, tokens)
		if err != nil {
			return nil, j.errorf(abi.CodeJudge, false, "waiting for the shared judge budget: %v", err)
		}
		return release, nil
	}
	if err := j.pacer.wait(ctx, j.clock, tokens); err != nil {
		return nil, j.errorf(abi.CodeJudge, false, "cancelled while waiting for the rate limit: %v", err)
	}
	if err := j.slots.acquire(ctx); err != nil {
		return nil, j.errorf(abi.CodeJudge, false, "cancelled while waiting for a free connection: %v", err)
	}
	return j.slots.release, nil
}
