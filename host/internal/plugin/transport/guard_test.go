package transport

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

// costedServices is plugintest.FakeServices that also prices requests, as the
// engine's Services do.
type costedServices struct {
	plugintest.FakeServices
	cost int
}

func (s *costedServices) JudgeCost(abi.JudgeRequest) int { return s.cost }

// TestGuardAdmission checks the guard's decisions on one batch, before
// anything is sent: the estimate cannot be wrapped around by huge numbers,
// a Services that prices requests is asked, and numbers out of range are
// an ABI violation.
func TestGuardAdmission(t *testing.T) {
	temp := 3.0
	user := []abi.Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		name string
		svc  Services
		req  abi.JudgeRequest
		code abi.Code // "" = sent
		want string
	}{
		{"small", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, MaxTokens: 100}, "", ""},
		{"reply cap counted", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, MaxTokens: 2000}, abi.CodeBudget, "requests[0] alone may spend ~20"},
		{"samples counted", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, MaxTokens: 100, Score: &abi.ScoreSpec{Min: 0, Max: 10, Samples: 20}}, abi.CodeBudget, "alone may spend"},
		{"no wrap-around", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, MaxTokens: math.MaxInt, Score: &abi.ScoreSpec{Min: 0, Max: 1, Samples: math.MaxInt}}, abi.CodeBudget, "alone may spend"},
		{"priced by Services", &costedServices{cost: 5000}, abi.JudgeRequest{Messages: user}, abi.CodeBudget, "~5000 tokens"},
		{"negative max_tokens", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, MaxTokens: -1}, abi.CodeABI, "requests[0].max_tokens is -1; want >= 0"},
		{"negative top_logprobs", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, TopLogprobs: -5}, abi.CodeABI, "requests[0].top_logprobs is -5"},
		{"temperature", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, Temperature: &temp}, abi.CodeABI, "requests[0].temperature is 3; want [0,2]"},
		{"sample temperature", &plugintest.FakeServices{}, abi.JudgeRequest{Messages: user, Score: &abi.ScoreSpec{Min: 0, Max: 1, SampleTemperature: &temp}}, abi.CodeABI, "requests[0].score.sample_temperature is 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := Info{Descriptor: abi.Descriptor{Name: "g", Version: "1", Capabilities: []abi.Capability{abi.CapJudge}}}
			opts := Options{Grants: Grants{Judge: true}, Limits: Limits{MaxJudgeTokens: 1000}.WithDefaults()}
			g := NewGuard(tc.svc, info, opts, nil)
			_, err := g.Judge(context.Background(), []abi.JudgeRequest{tc.req})
			var sent int64
			switch s := tc.svc.(type) {
			case *plugintest.FakeServices:
				sent = s.Calls.Load()
			case *costedServices:
				sent = s.Calls.Load()
			}
			if tc.code == "" {
				if err != nil || sent != 1 {
					t.Fatalf("want it sent, got %v (%d sent)", err, sent)
				}
				if calls, tokens := g.used(); calls != 1 || tokens != 0 {
					t.Errorf("used %d calls, %d tokens; want the estimate settled to what was spent (0)", calls, tokens)
				}
				return
			}
			if err == nil || err.Code != tc.code || !strings.Contains(err.Message, tc.want) {
				t.Fatalf("want %s %q, got %v", tc.code, tc.want, err)
			}
			if sent != 0 {
				t.Errorf("%d requests sent", sent)
			}
			if calls, tokens := g.used(); calls != 0 || tokens != 0 {
				t.Errorf("a refused batch was charged: %d calls, %d tokens", calls, tokens)
			}
		})
	}
}
