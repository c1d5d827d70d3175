package judge

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// Allocation budgets of the judge's reply path, checked by scripts/test:
// counts of allocations, not time, so they hold on a loaded machine. A
// change that goes over one has put per-token or per-alternative work back
// on the path (encoding/json made ~990 allocations of the 20-alternative
// reply; the one-pass decoder makes 4). Raise a budget only with a reason,
// and say it in bench/README.md.
const (
	// decodeAllocBudget: decoding one scoring reply, 36 tokens × 20
	// alternatives, whatever is kept.
	decodeAllocBudget = 8
	// callAllocBudget: one whole Judge.Do of that reply against the fake
	// judge server in this process, the server's own allocations included
	// (it sends the body as is, but parses the request). Measured 389 when
	// set (Go 1.26, openai-go v1.12.0): ~125 were openai-go building and
	// sending the request, ~30 the server, ~50 the schema check of the
	// reply; the decode is 4. encoding/json decoding made it ~1,380. 355
	// since the judge encodes the request body itself (wire.go); 304
	// since the reply's content is parsed once (replyobject.go) and the
	// score weighting allocates only its result; 303 with the flight's
	// runner handoff (runners.go), 294 since the body goes through the
	// client's Post rather than New's typed params (client.go), 267
	// since a reply in the built-in metrics' schema subset is accepted
	// without jsonschema (simpleschema.go).
	callAllocBudget = 275
	// requestBodyAllocBudget: encoding one scoring request's body (3 when
	// set: the message list, the encoder's buffer, the body; openai-go's
	// encoder made 40). 1 since the judge writes it by hand (appendjson.go):
	// the body.
	requestBodyAllocBudget = 2
	// forecastAllocBudget: Forecast of one scoring request (the plugin
	// guard's cost check before every call). It leaves out the cache key,
	// which Do computes: 7 allocations with it (encoding the key
	// material, the hex digest), 3 without when set.
	forecastAllocBudget = 5
)

func TestAllocationBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	body := benchReply(t)
	for _, need := range []tokenNeed{needScoreTokens, needAllTokens} {
		allocs := testing.AllocsPerRun(200, func() {
			if _, f := decodeCompletion("application/json", body, need); f != nil {
				t.Fatal(f.detail)
			}
		})
		t.Logf("decode (need %d): %.0f allocations per reply", need, allocs)
		if allocs > decodeAllocBudget {
			t.Errorf("decoding a 20-alternative reply (need %d) makes %.0f allocations; the budget is %d", need, allocs, decodeAllocBudget)
		}
	}

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
