package wasm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestJudgePath drives an honest judge-using guest through the grants and
// budgets: what the host's Services answer reaches the guest, and every
// refusal comes back as a typed error in the result.
func TestJudgePath(t *testing.T) {
	ctx := context.Background()
	type want struct {
		code    abi.Code // result error; "" = success
		message string   // in the error's message
		reason  string
		judged  int64 // requests that reached Services
		batches float64
	}
	for _, tc := range []struct {
		name    string
		opts    transport.Options
		tokens  int
		prompts []string
		batch   int
		want    want
	}{
		{name: "granted, batched", opts: transport.Options{Grants: transport.Grants{Judge: true}}, prompts: []string{"a", "b", "c"}, batch: 2,
			want: want{reason: "echo(system:BE BRIEF,user:a / the input); echo(system:BE BRIEF,user:b / the input); echo(system:BE BRIEF,user:c / the input)", judged: 3, batches: 2}},
		{name: "not granted", opts: transport.Options{}, prompts: []string{"a"},
			want: want{code: abi.CodeCapability}},
		{name: "call budget", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeCalls: 2}}, prompts: []string{"a", "b", "c"}, batch: 1,
			want: want{code: abi.CodeBudget, judged: 2}},
		{name: "batch larger than budget", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeCalls: 2}}, prompts: []string{"a", "b", "c"}, batch: 3,
			want: want{code: abi.CodeBudget}},
		{name: "token budget", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeTokens: 150}}, tokens: 100, prompts: []string{"a", "b", "c"}, batch: 1,
			want: want{code: abi.CodeBudget, judged: 2}},
		{name: "payload too large", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxOutputBytes: 4096}}, prompts: []string{strings.Repeat("x", 8192)},
			want: want{code: abi.CodeOutputTooLarge}},
		// The first batch is checked before it is sent, on an estimate of
		// its prompts and reply caps: three ~1000-token prompts do not fit
		// 1500 tokens, though nothing has been spent yet.
		{name: "token budget, first batch", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeTokens: 1500}},
			prompts: []string{strings.Repeat("w", 4000), strings.Repeat("x", 4000), strings.Repeat("y", 4000)}, batch: 3,
			want: want{code: abi.CodeBudget, message: "judge-token budget: 0 used + ~3"}},
		{name: "token budget, one request too large", opts: transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeTokens: 500}},
			prompts: []string{"a", strings.Repeat("x", 4000)}, batch: 2,
			want: want{code: abi.CodeBudget, message: "requests[1] alone may spend ~1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, "judge", tc.opts)
			svc := &plugintest.FakeServices{TokensPerCall: tc.tokens}
			cfg, _ := json.Marshal(map[string]any{"prompts": tc.prompts, "batch": tc.batch, "system": "be brief"})
			prep, err := p.Prepare(ctx, svc, &abi.PrepareRequest{Kind: "ask", Metric: "m", Config: cfg})
			if err != nil || prep.Error != nil {
				t.Fatalf("prepare: %v / %s", err, plugintest.MustJSON(t, prep))
			}
			res, err := p.Measure(ctx, svc, &abi.MeasureRequest{Kind: "ask", Metric: "m", Config: cfg, Prepared: prep.State,
				Case: abi.TestCase{ID: "c1", Input: "the input"}})
			if err != nil {
				t.Fatalf("a refusal must not be an invocation error: %v", err)
			}
			if got := svc.Calls.Load(); got != tc.want.judged {
				t.Errorf("%d requests reached Services, want %d", got, tc.want.judged)
			}
			if tc.want.code != "" {
				if res.Error == nil || res.Error.Code != tc.want.code || res.Error.Plugin != "judge@0.1.0" || !strings.Contains(res.Error.Message, tc.want.message) {
					t.Fatalf("want %s %q from judge@0.1.0, got %s", tc.want.code, tc.want.message, plugintest.MustJSON(t, res))
				}
				return
			}
			if res.Error != nil || res.Reason != tc.want.reason {
				t.Fatalf("got %s\nwant reason %q", plugintest.MustJSON(t, res), tc.want.reason)
			}
			var d struct{ Batches float64 }
			if err := json.Unmarshal(res.Details, &d); err != nil || d.Batches != tc.want.batches {
				t.Errorf("batches %v, want %v (%v)", d.Batches, tc.want.batches, err)
			}
			if len(svc.Logs) != 1 || svc.Logs[0].Message != "asked" || svc.LogIDs[0] != "judge@0.1.0" {
				t.Errorf("logs %+v", svc.Logs)
			}
		})
	}
}
