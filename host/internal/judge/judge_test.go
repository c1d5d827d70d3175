package judge

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func TestDoPlainReply(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.On(judgetest.ContainsMessage("capital of France"), judgetest.Reply{Content: "Paris"})

	resp := h.judge.Do(context.Background(), userRequest("What is the capital of France?"))
	mustOK(t, resp)
	if resp.Content != "Paris" {
		t.Fatalf("Content = %q; want Paris", resp.Content)
	}
	if resp.JSON != nil || resp.Tokens != nil || resp.Score != nil {
		t.Errorf("unasked-for fields set: %+v", resp)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests; want 1", len(reqs))
	}
	got := reqs[0]
	if got.Model != "gpt-test" || len(got.Messages) != 2 || got.Messages[0].Role != "system" ||
		got.Messages[1].Content != "What is the capital of France?" {
		t.Errorf("request on the wire = %+v", got)
	}
	if got.Logprobs || got.ResponseFormat != nil || got.Temperature != nil || got.N != 1 || got.MaxTokens != 0 {
		t.Errorf("request sent options nobody asked for: %+v", got)
	}
}

func TestTemperatureAndMaxTokens(t *testing.T) {
	cfgTemp, reqTemp := 0.2, 0.7
	tests := []struct {
		name      string
		cfg       func(*Config)
		req       func(*abi.JudgeRequest)
		wantTemp  *float64
		wantMaxTk int
	}{
		{"nothing set", nil, nil, nil, 0},
		{"config defaults", func(c *Config) { c.Temperature = &cfgTemp; c.MaxTokens = 300 }, nil, &cfgTemp, 300},
		{"request wins", func(c *Config) { c.Temperature = &cfgTemp; c.MaxTokens = 300 },
			func(r *abi.JudgeRequest) { r.Temperature = &reqTemp; r.MaxTokens = 50 }, &reqTemp, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			req := userRequest("hi")
			if tc.req != nil {
				tc.req(&req)
			}
			mustOK(t, h.judge.Do(context.Background(), req))
			got := h.srv.Requests()[0]
			if (got.Temperature == nil) != (tc.wantTemp == nil) || (got.Temperature != nil && *got.Temperature != *tc.wantTemp) {
				t.Errorf("temperature = %v; want %v", got.Temperature, tc.wantTemp)
			}
			if got.MaxTokens != tc.wantMaxTk {
				t.Errorf("max_tokens = %d; want %d", got.MaxTokens, tc.wantMaxTk)
			}
		})
	}
}

func TestAccountingTokensAndUSD(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Price = Price{InputPerMillion: 2.5, OutputPerMillion: 10}
	})
	h.srv.SetDefault(judgetest.Reply{Content: "ok", Usage: &judgetest.Usage{PromptTokens: 1200, CompletionTokens: 345}})

	resp := h.judge.Do(context.Background(), userRequest("grade this"))
	mustOK(t, resp)
	wantUSD := 1200*2.5/1e6 + 345*10/1e6
	u := resp.Usage
	if u.Model != "gpt-test" || u.InputTokens != 1200 || u.OutputTokens != 345 || u.USD != wantUSD ||
		u.Attempts != 1 || u.CacheHit {
		t.Fatalf("Usage = %+v; want gpt-test, 1200 in, 345 out, $%v, 1 attempt, no cache hit", u, wantUSD)
	}
	if got := h.judge.Price(1200, 345); got != wantUSD {
		t.Errorf("Price(1200,345) = %v; want %v", got, wantUSD)
	}

	resp2 := h.judge.Do(context.Background(), userRequest("grade that"))
	mustOK(t, resp2)
	tot := h.judge.Totals()
	want := Totals{Requests: 2, Calls: 2, Attempts: 2, InputTokens: 2400, OutputTokens: 690}
	if tot.Requests != want.Requests || tot.Calls != want.Calls || tot.Attempts != want.Attempts ||
		tot.InputTokens != want.InputTokens || tot.OutputTokens != want.OutputTokens || tot.Errors != 0 || tot.CacheHits != 0 {
		t.Errorf("Totals = %+v; want %+v", tot, want)
	}
	if math.Abs(tot.USD-2*wantUSD) > 1e-15 {
		t.Errorf("Totals.USD = %v; want %v", tot.USD, 2*wantUSD)
	}
}

func TestLatencyFromClock(t *testing.T) {
	h := newHarness(t, nil)
	resp := h.judge.Do(context.Background(), userRequest("x"))
	mustOK(t, resp)
	// The fake clock does not move during a call without waits.
	if resp.Usage.LatencyMS != 0 {
		t.Errorf("LatencyMS = %v; want 0 on a frozen clock", resp.Usage.LatencyMS)
	}
}

func TestLogprobsRequestedCappedAndConverted(t *testing.T) {
	tests := []struct {
		name        string
		supports    bool
		maxTop      int
		reqTop      int
		wantSent    bool
		wantTop     int
		wantTopsLen int
	}{
		{"capped at max_top_logprobs", true, 5, 10, true, 5, 3}, // reply has 3 alternatives
		{"below the cap", true, 20, 2, true, 2, 2},
		{"judge without logprobs", false, 20, 5, false, 0, 0},
		{"not asked", true, 20, 0, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsLogprobs = tc.supports; c.MaxTopLogprobs = tc.maxTop })
			reply := judgetest.JSONScoreReply("fine", "7", map[string]float64{"7": 0.6, "8": 0.3, "6": 0.1})
			h.srv.SetDefault(reply)
			req := userRequest("grade")
			req.TopLogprobs = tc.reqTop
			resp := h.judge.Do(context.Background(), req)
			mustOK(t, resp)

			sent := h.srv.Requests()[0]
			if sent.Logprobs != tc.wantSent || sent.TopLogprobs != tc.wantTop {
				t.Fatalf("sent logprobs=%v top_logprobs=%d; want %v, %d", sent.Logprobs, sent.TopLogprobs, tc.wantSent, tc.wantTop)
			}
			if !tc.wantSent {
				if resp.Tokens != nil {
					t.Fatalf("Tokens = %v; want none", resp.Tokens)
				}
				return
			}
			if len(resp.Tokens) != len(reply.Logprobs) {
				t.Fatalf("got %d tokens; want %d", len(resp.Tokens), len(reply.Logprobs))
			}
			var text string
			for _, tok := range resp.Tokens {
				text += tok.Token
			}
			if text != reply.Content {
				t.Errorf("tokens spell %q; want %q", text, reply.Content)
			}
			// The score token: "7" with its alternatives, most likely first.
			var scoreTok *abi.TokenLogprob
			for i := range resp.Tokens {
				if resp.Tokens[i].Token == "7" {
					scoreTok = &resp.Tokens[i]
				}
			}
			if scoreTok == nil {
				t.Fatalf("no score token in %v", resp.Tokens)
			}
			if math.Abs(scoreTok.Logprob-math.Log(0.6)) > 1e-12 {
				t.Errorf("score logprob = %v; want ln 0.6", scoreTok.Logprob)
			}
			if len(scoreTok.Top) != tc.wantTopsLen || scoreTok.Top[0].Token != "7" ||
				math.Abs(scoreTok.Top[1].Logprob-math.Log(0.3)) > 1e-12 || scoreTok.Top[1].Token != "8" {
				t.Errorf("score alternatives = %+v; want %d, 7 then 8", scoreTok.Top, tc.wantTopsLen)
			}
		})
	}
}

func TestBatchAnswersInOrder(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxConcurrency = 3 })
	h.srv.SetDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		return judgetest.Reply{Content: "echo:" + r.LastMessage()}
	}))
	var reqs []abi.JudgeRequest
	for i := range 20 {
		reqs = append(reqs, userRequest(string(rune('a'+i))))
	}
	resps := h.judge.Batch(context.Background(), reqs)
	if len(resps) != len(reqs) {
		t.Fatalf("%d responses for %d requests", len(resps), len(reqs))
	}
	for i, r := range resps {
		mustOK(t, r)
		if want := "echo:" + string(rune('a'+i)); r.Content != want {
			t.Errorf("response %d = %q; want %q", i, r.Content, want)
		}
	}
	if h.srv.Calls() != 20 {
		t.Errorf("server calls = %d; want 20", h.srv.Calls())
	}
	if got := h.judge.Batch(context.Background(), nil); len(got) != 0 {
		t.Errorf("Batch(nil) = %v", got)
	}
}

func TestMalformedRequests(t *testing.T) {
	tests := []struct {
		name string
		req  abi.JudgeRequest
		code abi.Code
		frag string
	}{
		{"no messages", abi.JudgeRequest{}, abi.CodeABI, "no messages"},
		{"bad role", abi.JudgeRequest{Messages: []abi.Message{{Role: "tool", Content: "x"}}}, abi.CodeABI, `role "tool"`},
		{"bad schema JSON", abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "x"}}, Schema: json.RawMessage(`{"type":`)}, abi.CodeABI, "schema"},
		{"schema not a schema", abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "x"}}, Schema: json.RawMessage(`{"type": 12}`)}, abi.CodeABI, "schema"},
		{"schema with file $ref", abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "x"}}, Schema: json.RawMessage(`{"$ref": "file:///etc/passwd"}`)}, abi.CodeABI, "not allowed"},
		{"empty score range", abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "x"}}, Score: &abi.ScoreSpec{Min: 5, Max: 5}}, abi.CodeInvalidConfig, "score range"},
		{"other judge", abi.JudgeRequest{Judge: "someone-else", Messages: []abi.Message{{Role: "user", Content: "x"}}}, abi.CodeJudge, `"someone-else"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			resp := h.judge.Do(context.Background(), tc.req)
			wantError(t, resp, tc.code, tc.frag, "judge grader (gpt-test)")
			if h.srv.Calls() != 0 {
				t.Errorf("a malformed request reached the server")
			}
			if resp.Usage.Model != "gpt-test" {
				t.Errorf("Usage.Model = %q", resp.Usage.Model)
			}
			if tot := h.judge.Totals(); tot.Errors != 1 || tot.Requests != 1 {
				t.Errorf("Totals = %+v; want 1 request, 1 error", tot)
			}
		})
	}
}

func TestDoNamedJudgeAccepted(t *testing.T) {
	h := newHarness(t, nil)
	req := userRequest("x")
	req.Judge = "grader"
	mustOK(t, h.judge.Do(context.Background(), req))
}
