package transport

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

// TestGuardEmbed: an embed request is gated by the judge capability
// (asked and granted), counts one judge call however many texts it
// carries, is charged its texts' estimated tokens before it is sent and
// what the judge reports afterwards (nothing on a cache hit), and every
// refusal leaves the budgets as they were and sends nothing.
func TestGuardEmbed(t *testing.T) {
	asks := abi.Descriptor{Name: "g", Version: "1", Capabilities: []abi.Capability{abi.CapJudge}}
	twoTexts := abi.EmbedRequest{Texts: []string{"alpha", "beta"}}
	for _, tc := range []struct {
		name   string
		svc    Services
		desc   abi.Descriptor
		grants Grants
		limits Limits
		req    abi.EmbedRequest
		code   abi.Code // "" = sent
		want   string
		tokens int // charged after a sent request
	}{
		{name: "sent", svc: &plugintest.EmbedServices{}, desc: asks, grants: Grants{Judge: true}, req: twoTexts, tokens: 7},
		{name: "cache hit costs no tokens", svc: &plugintest.EmbedServices{CacheHit: true}, desc: asks, grants: Grants{Judge: true}, req: twoTexts, tokens: 0},
		{name: "not granted", svc: &plugintest.EmbedServices{}, desc: asks, req: twoTexts, code: abi.CodeCapability, want: "not granted"},
		{name: "not asked", svc: &plugintest.EmbedServices{}, desc: abi.Descriptor{Name: "g", Version: "1"}, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeCapability, want: "does not ask"},
		{name: "services without Embed", svc: &plugintest.FakeServices{}, desc: asks, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeCapability, want: "do not embed"},
		{name: "no texts", svc: &plugintest.EmbedServices{}, desc: asks, grants: Grants{Judge: true}, req: abi.EmbedRequest{},
			code: abi.CodeABI, want: "texts is empty"},
		{name: "too many texts", svc: &plugintest.EmbedServices{}, desc: asks, grants: Grants{Judge: true}, req: abi.EmbedRequest{Texts: make([]string, abi.MaxEmbedTexts+1)},
			code: abi.CodeABI, want: "2049 texts; at most 2048"},
		{name: "call budget", svc: &plugintest.EmbedServices{}, desc: asks, grants: Grants{Judge: true}, limits: Limits{MaxJudgeCalls: -1}, req: twoTexts,
			code: abi.CodeBudget, want: "judge-call budget"},
		{name: "token budget", svc: &plugintest.EmbedServices{}, desc: asks, grants: Grants{Judge: true}, limits: Limits{MaxJudgeTokens: 2},
			req: abi.EmbedRequest{Texts: []string{"twelve chars"}}, code: abi.CodeBudget, want: "~3 tokens"},
		{name: "vectors missing", svc: &plugintest.EmbedServices{Short: true}, desc: asks, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeJudge, want: "1 vectors for 2 texts", tokens: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := tc.limits
			if limits.MaxJudgeCalls < 0 {
				limits.MaxJudgeCalls = 0
				limits = limits.WithDefaults()
				limits.MaxJudgeCalls = 0
			} else {
				limits = limits.WithDefaults()
			}
			g := NewGuard(tc.svc, Info{Descriptor: tc.desc}, Options{Grants: tc.grants, Limits: limits}, nil)
			res := g.Embed(context.Background(), tc.req)
			var sent int64
			if s, ok := tc.svc.(*plugintest.EmbedServices); ok {
				sent = s.Embeds.Load()
			}
			calls, tokens := g.used()
			if tc.code == "" {
				if res.Error != nil || sent != 1 || len(res.Vectors) != len(tc.req.Texts) {
					t.Fatalf("want it sent and answered, got %+v (%d sent)", res, sent)
				}
				if calls != 1 || tokens != tc.tokens {
					t.Errorf("used %d calls, %d tokens; want 1 call, %d tokens", calls, tokens, tc.tokens)
				}
				return
			}
			if res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, tc.want) {
				t.Fatalf("want %s %q, got %+v", tc.code, tc.want, res.Error)
			}
			if res.Vectors == nil || len(res.Vectors) != 0 {
				t.Errorf("vectors %v; want [] with an error", res.Vectors)
			}
			if tc.code == abi.CodeJudge { // sent, and charged, but answered wrong
				if sent != 1 || calls != 1 || tokens != tc.tokens {
					t.Errorf("%d sent, used %d calls, %d tokens", sent, calls, tokens)
				}
				return
			}
			if sent != 0 || calls != 0 || tokens != 0 {
				t.Errorf("a refused request: %d sent, charged %d calls, %d tokens", sent, calls, tokens)
			}
		})
	}
}
