package judge

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// Allocation budgets of the judge's call path, checked by scripts/test:
// counts of allocations, not time, so they hold on a loaded machine. A
// change that goes over one has put per-token or per-alternative work back
// on the path. Raise a budget only with a reason, and say it in
// bench/README.md. (Decoding the reply has its own budget, in
// openaiwire's TestDecodeAllocations.)
const (
	// callAllocBudget: one whole Judge.Do of a scoring reply with 20
	// alternatives on each of its tokens against the fake judge server in
	// this process, the server's own allocations included (it sends the
	// body as is, but parses the request). Measured 389 when set (Go
	// 1.26, openai-go v1.12.0), 266 before the judge moved its JSON to
	// go-json-experiment, 289 after (the request and the key encoded
	// through reflection, the reply's content parsed into a tree and
	// written back canonical by the library), 316 since every structured
	// reply is validated by jsonschema (the hand-written validator of the
	// built-in metrics' schema subset saved ~27 allocations, a few
	// microseconds, per call), 322 → 331 with openai-go v3 (its request
	// path checks the request's origin and options more).
	callAllocBudget = 340
	// requestBodyAllocBudget: encoding one scoring request's body
	// (openai-go's encoder made 40; the hand-written one 1): the message
	// list and the body.
	requestBodyAllocBudget = 3
	// forecastAllocBudget: Forecast of one scoring request (the plugin
	// guard's cost check before every call). It leaves out the cache key,
	// which Do computes: 7 allocations with it (encoding the key
	// material, the hex digest), 3 without when set.
	forecastAllocBudget = 5
)

// scoringReply is the body the fake judge sends for a G-Eval scoring
// reply with 20 alternatives on every token, as bench/cmd/fakejudge pads
// it.
func scoringReply(t *testing.T) []byte {
	t.Helper()
	reply := judgetest.JSONScoreReply("The actual output addresses the input directly and agrees with the expected output on the main points.", "8",
		map[string]float64{"8": 0.6, "7": 0.25, "9": 0.15})
	srv := judgetest.New(t, judgetest.WithoutRecording(), judgetest.WithDefault(paddedReply(reply, 20)))
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(
		`{"model": "m", "messages": [{"role": "user", "content": "grade"}], "logprobs": true, "top_logprobs": 20}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("fake judge: HTTP %d, %v: %s", resp.StatusCode, err, body)
	}
	return body
}

func TestAllocationBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	body := scoringReply(t)
	p := benchPlan()
	temp := 0.0
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := p.requestBody("gpt-4o-mini", call{temperature: &temp}, modePrompt); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("request body: %.0f allocations per request", allocs)
	if allocs > requestBodyAllocBudget {
		t.Errorf("encoding a scoring request makes %.0f allocations; the budget is %d", allocs, requestBodyAllocBudget)
	}

	srv := judgetest.New(t, judgetest.WithoutRecording(),
		judgetest.WithDefault(judgetest.Reply{RawBody: string(body), ContentType: "application/json"}))
	cfg := testConfig(srv.URL())
	cfg.SupportsLogprobs, cfg.SupportsJSONSchema = true, true
	j, err := New(cfg, WithAPIKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	freq := scoreRequest("grade the sky", true)
	allocs = testing.AllocsPerRun(200, func() {
		if _, err := j.Forecast(freq); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Forecast: %.0f allocations per request", allocs)
	if allocs > forecastAllocBudget {
		t.Errorf("forecasting a scoring request makes %.0f allocations; the budget is %d", allocs, forecastAllocBudget)
	}
	for _, omit := range []bool{true, false} {
		req := scoreRequest("grade the sky", omit)
		allocs := testing.AllocsPerRun(200, func() {
			if resp := j.Do(context.Background(), req); resp.Error != nil || resp.Score == nil {
				t.Fatalf("%+v", resp)
			}
		})
		t.Logf("Judge.Do (omit_tokens %v): %.0f allocations per call, server included", omit, allocs)
		if allocs > callAllocBudget {
			t.Errorf("one judge call (omit_tokens %v) makes %.0f allocations, the fake server's included; the budget is %d", omit, allocs, callAllocBudget)
		}
	}
}
