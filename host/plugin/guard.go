package plugin

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentanvil/anvil/abi"
)

// guard wraps Services for one invocation: it enforces the grants and the
// judge-call and judge-token budgets. Both transports use it, so a budget
// behaves the same in-process and in a sandbox.
type guard struct {
	svc    Services
	info   Info
	grants Grants
	limits Limits

	mu     sync.Mutex
	calls  int
	tokens int
}

func newGuard(svc Services, info Info, grants Grants, limits Limits) *guard {
	return &guard{svc: svc, info: info, grants: grants, limits: limits}
}

// judge answers a batch, or a batch-level error when the capability is
// denied or the budget cannot cover the batch.
func (g *guard) judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, *abi.Error) {
	if !g.grants.Judge || g.svc == nil {
		return nil, named(g.info, abi.Errorf(abi.CodeCapability,
			"capability %q is not granted to this plugin (grant it under plugins.<name>.grants in the config)", abi.CapJudge))
	}
	g.mu.Lock()
	if g.calls+len(reqs) > g.limits.MaxJudgeCalls {
		used := g.calls
		g.mu.Unlock()
		return nil, named(g.info, abi.Errorf(abi.CodeBudget,
			"judge-call budget: %d used + %d asked > max_judge_calls %d", used, len(reqs), g.limits.MaxJudgeCalls))
	}
	if g.tokens >= g.limits.MaxJudgeTokens {
		used := g.tokens
		g.mu.Unlock()
		return nil, named(g.info, abi.Errorf(abi.CodeBudget,
			"judge-token budget: %d used >= max_judge_tokens %d", used, g.limits.MaxJudgeTokens))
	}
	g.calls += len(reqs)
	g.mu.Unlock()

	resps := g.svc.Judge(ctx, reqs)
	if len(resps) != len(reqs) {
		return nil, named(g.info, abi.Errorf(abi.CodeJudge, "host answered %d of %d judge requests", len(resps), len(reqs)))
	}
	g.mu.Lock()
	for _, r := range resps {
		if !r.Usage.CacheHit {
			g.tokens += r.Usage.InputTokens + r.Usage.OutputTokens
		}
	}
	g.mu.Unlock()
	return resps, nil
}

func (g *guard) log(ctx context.Context, rec abi.LogRecord) {
	if g.svc != nil {
		g.svc.Log(ctx, g.info.ID(), rec)
	}
}

// used reports the calls and tokens spent so far.
func (g *guard) used() (calls, tokens int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, g.tokens
}

func (g *guard) String() string {
	c, t := g.used()
	return fmt.Sprintf("%s: %d judge calls, %d tokens", g.info.ID(), c, t)
}
