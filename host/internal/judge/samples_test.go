package judge

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// threeChoices scripts one reply with three choices scoring 2, 5 and 9, the
// second of them not valid JSON.
func threeChoices(bad bool) judgetest.Reply {
	mk := func(v string) judgetest.Choice {
		r := judgetest.JSONScoreReply("r"+v, v, nil)
		return judgetest.Choice{Content: r.Content, Logprobs: r.Logprobs}
	}
	c := []judgetest.Choice{mk("2"), mk("5"), mk("9")}
	if bad {
		c[1] = judgetest.Choice{Content: "not json"}
	}
	return judgetest.Reply{Choices: c}
}

// With supports_n, the samples the cache lacks are one call with n
// choices, each recorded under its own sample's key; the call's usage is
// on the first sample only; a later run replays each sample's own reply.
func TestDoSamplesOneCallWithN(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema, c.SupportsN = true, true, true },
		WithCache(st, CacheReadWrite))
	h.srv.SetDefault(threeChoices(false))
	ctx := context.Background()
	got := h.judge.DoSamples(ctx, scoredRequest(), []int{0, 1, 2})
	var scores []float64
	calls := 0
	for _, r := range got {
		mustOK(t, r)
		scores = append(scores, r.Score.Value)
		calls += r.Usage.Calls
	}
	reqs := h.srv.Requests()
	if len(reqs) != 1 || reqs[0].N != 3 || calls != 1 || got[0].Usage.Calls != 1 || got[0].Usage.InputTokens == 0 {
		t.Fatalf("%d requests (n %v), %d calls in usage (first %+v); want one call with n=3 charged to sample 0", len(reqs), reqs, calls, got[0].Usage)
	}
	if !reflect.DeepEqual(scores, []float64{2, 5, 9}) {
		t.Fatalf("scores %v; want choice i for sample i: [2 5 9]", scores)
	}
	for k, want := range []float64{2, 5, 9} {
		r := h.judge.DoSample(ctx, scoredRequest(), k)
		if !r.Usage.CacheHit || r.Score.Value != want {
			t.Errorf("sample %d replayed: hit %v, score %v; want %v from the cache", k, r.Usage.CacheHit, r.Score.Value, want)
		}
	}
	if h.srv.Calls() != 1 {
		t.Errorf("%d calls after the replays; want 1", h.srv.Calls())
	}
	if tot := h.judge.Totals(); tot.Requests != 6 || tot.Calls != 1 {
		t.Errorf("totals %+v; want 6 requests, 1 call", tot)
	}
}

// A choice that is not usable is asked again alone (with the repair a
// single request gets); the others keep their choices.
func TestDoSamplesAsksAnUnusableChoiceAgain(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema, c.SupportsN = true, true, true })
	h.srv.On(judgetest.All(judgetest.Always(), func(r judgetest.RecordedRequest) bool { return r.N == 1 }), judgetest.JSONScoreReply("again", "6", nil))
	h.srv.SetDefault(threeChoices(true))
	got := h.judge.DoSamples(context.Background(), scoredRequest(), []int{0, 1, 2})
	var scores []float64
	calls := 0
	for _, r := range got {
		mustOK(t, r)
		scores = append(scores, r.Score.Value)
		calls += r.Usage.Calls
	}
	if !reflect.DeepEqual(scores, []float64{2, 6, 9}) || h.srv.Calls() != 2 || calls != 2 {
		t.Fatalf("scores %v, %d server calls, %d in usage; want [2 6 9] from 2 calls", scores, h.srv.Calls(), calls)
	}
}

// Without supports_n each sample is its own call, as DoSample.
func TestDoSamplesWithoutNIsOneCallEach(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema = true, true })
	h.srv.SetDefault(judgetest.JSONScoreReply("r", "7", nil))
	got := h.judge.DoSamples(context.Background(), scoredRequest(), []int{0, 1, 2})
	for _, r := range got {
		mustOK(t, r)
	}
	if h.srv.Calls() != 3 {
		t.Fatalf("%d calls; want 3", h.srv.Calls())
	}
	for _, r := range h.srv.Requests() {
		if r.N > 1 {
			t.Errorf("a request asked for n=%d from a judge without supports_n", r.N)
		}
	}
}
