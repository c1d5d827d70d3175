package judge

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// tenSplitReply is a scoring reply whose 10 is written "1","0", every token
// with 20 alternatives: weighting reads two positions and the evidence of
// multi-digit tokens.
func tenSplitReply() judgetest.Reply {
	toks := judgetest.SplitScoreTokens(`{"reason": "all 3 steps met in 2 places", "score": `, []string{"1", "0"},
		map[string]float64{"1": 0.7, "9": 0.2, "8": 0.1})
	toks = append(toks, judgetest.Tokens("}")...)
	return paddedReply(judgetest.Reply{Logprobs: toks}, 20)
}

func scoreRequest(text string, omit bool) abi.JudgeRequest {
	req := schemaRequest(text)
	req.TopLogprobs = 20
	req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
	req.OmitTokens = omit
	return req
}

// A request that omits the tokens gets the same reply and score, bit for
// bit, without them; the judge is asked the same thing.
func TestOmitTokensSameScore(t *testing.T) {
	for _, reply := range []judgetest.Reply{
		tenSplitReply(),
		paddedReply(judgetest.JSONScoreReply("7 of 9 facts", "7", map[string]float64{"7": 0.6, "8": 0.3, "6": 0.1}), 20),
	} {
		h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema, c.MaxTopLogprobs = true, true, 20 })
		h.srv.SetDefault(reply)
		full := h.judge.Do(context.Background(), scoreRequest("grade", false))
		lean := h.judge.Do(context.Background(), scoreRequest("grade", true))
		mustOK(t, full)
		mustOK(t, lean)
		if len(full.Tokens) == 0 || lean.Tokens != nil {
			t.Fatalf("tokens: %d without omit_tokens, %d with; want some, none", len(full.Tokens), len(lean.Tokens))
		}
		if full.Score == nil || full.Score.Mode != abi.ScoreWeighted || !reflect.DeepEqual(full.Score, lean.Score) {
			t.Errorf("score %+v; with omit_tokens %+v", full.Score, lean.Score)
		}
		if full.Content != lean.Content || string(full.JSON) != string(lean.JSON) {
			t.Errorf("reply %q / %s; with omit_tokens %q / %s", full.Content, full.JSON, lean.Content, lean.JSON)
		}
		reqs := h.srv.Requests()
		if len(reqs) != 2 || !reqs[1].Logprobs || reqs[1].TopLogprobs != 20 || reqs[0].TopLogprobs != reqs[1].TopLogprobs {
			t.Errorf("requests sent: %+v", reqs)
		}
	}
}

// A reply recorded with its tokens (as every run before omit_tokens
// recorded it) answers the same request with omit_tokens, without the
// tokens; a reply recorded without them never answers a request that reads
// them.
func TestOmitTokensCache(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema, c.MaxTopLogprobs = true, true, 20 },
		WithCache(st, CacheReadWrite))
	h.srv.SetDefault(tenSplitReply())
	ctx := context.Background()

	full := h.judge.Do(ctx, scoreRequest("recorded with tokens", false))
	mustOK(t, full)
	hit := h.judge.Do(ctx, scoreRequest("recorded with tokens", true))
	mustOK(t, hit)
	if !hit.Usage.CacheHit || hit.Tokens != nil || !reflect.DeepEqual(hit.Score, full.Score) || h.srv.Calls() != 1 {
		t.Errorf("omit_tokens after a full recording: hit %v, %d tokens, score %+v (want %+v), %d calls; want a hit without tokens, 1 call",
			hit.Usage.CacheHit, len(hit.Tokens), hit.Score, full.Score, h.srv.Calls())
	}
	if got, ok := h.judge.Cached(ctx, scoreRequest("recorded with tokens", true)); !ok || got.Tokens != nil {
		t.Errorf("Cached(omit_tokens) = %v, %d tokens; want recorded, none", ok, len(got.Tokens))
	}

	lean := h.judge.Do(ctx, scoreRequest("recorded without tokens", true))
	mustOK(t, lean)
	again := h.judge.Do(ctx, scoreRequest("recorded without tokens", true))
	if !again.Usage.CacheHit || h.srv.Calls() != 2 {
		t.Errorf("omit_tokens twice: second hit %v after %d calls; want a hit after 2", again.Usage.CacheHit, h.srv.Calls())
	}
	if _, ok := h.judge.Cached(ctx, scoreRequest("recorded without tokens", false)); ok {
		t.Error("Cached: a reply recorded without tokens answers a request that reads them")
	}
	withTokens := h.judge.Do(ctx, scoreRequest("recorded without tokens", false))
	mustOK(t, withTokens)
	if withTokens.Usage.CacheHit || len(withTokens.Tokens) == 0 || h.srv.Calls() != 3 {
		t.Errorf("tokens asked after a recording without them: hit %v, %d tokens, %d calls; want a call with tokens",
			withTokens.Usage.CacheHit, len(withTokens.Tokens), h.srv.Calls())
	}
}

// omit_tokens changes nothing for a request that would get no tokens: its
// cache key stays that of the request without the flag.
func TestOmitTokensKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs = true })
	key := func(req abi.JudgeRequest) string {
		p, err := h.judge.plan(req, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p.key
	}
	noTokens := scoreRequest("x", false)
	noTokens.TopLogprobs = 0
	noTokensOmit := noTokens
	noTokensOmit.OmitTokens = true
	if key(noTokens) != key(noTokensOmit) {
		t.Error("omit_tokens changed the key of a request that gets no tokens")
	}
	if key(scoreRequest("x", false)) == key(scoreRequest("x", true)) {
		t.Error("a reply kept without tokens has the key of one kept with them")
	}
}
