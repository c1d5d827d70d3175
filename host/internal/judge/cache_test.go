package judge

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/store"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The judge's Cache is what host/store provides.
var _ Cache = (*store.Store)(nil)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), ".anvil", "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func scoredRequest() abi.JudgeRequest {
	req := schemaRequest("Grade: the sky is blue.")
	req.TopLogprobs = 3
	req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
	return req
}

func TestCacheHitMakesNoCall(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) {
		c.SupportsLogprobs, c.SupportsJSONSchema = true, true
		c.Price = Price{InputPerMillion: 1, OutputPerMillion: 2}
	}, WithCache(st, CacheReadWrite))
	h.srv.SetDefault(judgetest.JSONScoreReply("blue indeed", "8", map[string]float64{"8": 0.7, "9": 0.2, "7": 0.1}))

	first := h.judge.Do(context.Background(), scoredRequest())
	mustOK(t, first)
	if first.Usage.CacheHit || first.Usage.USD == 0 || first.Usage.Attempts != 1 {
		t.Fatalf("first Usage = %+v; want a paid upstream call", first.Usage)
	}
	if h.srv.Calls() != 1 {
		t.Fatalf("server calls = %d; want 1", h.srv.Calls())
	}

	second := h.judge.Do(context.Background(), scoredRequest())
	mustOK(t, second)
	if h.srv.Calls() != 1 {
		t.Fatalf("server calls after the repeat = %d; want still 1", h.srv.Calls())
	}
	u := second.Usage
	if !u.CacheHit || u.USD != 0 || u.LatencyMS != 0 || u.Attempts != 0 || u.Model != "gpt-test" ||
		u.InputTokens != first.Usage.InputTokens || u.OutputTokens != first.Usage.OutputTokens {
		t.Errorf("hit Usage = %+v; want CacheHit, $0, 0 ms, 0 attempts, recorded tokens", u)
	}
	if second.Content != first.Content || string(second.JSON) != string(first.JSON) ||
		!reflect.DeepEqual(second.Tokens, first.Tokens) || first.Score == nil || !reflect.DeepEqual(second.Score, first.Score) {
		t.Errorf("hit differs from the recorded reply:\n got %+v\nwant %+v", second, first)
	}
	tot := h.judge.Totals()
	if tot.Requests != 2 || tot.CacheHits != 1 || tot.Calls != 1 || tot.USD != first.Usage.USD {
		t.Errorf("Totals = %+v; want 2 requests, 1 hit, 1 call, USD of one call", tot)
	}

	// A different sampling parameter is a different request.
	other := scoredRequest()
	temp := 0.0
	other.Temperature = &temp
	mustOK(t, h.judge.Do(context.Background(), other))
	if h.srv.Calls() != 2 {
		t.Errorf("a request with another temperature was served from the cache")
	}
}

func TestCacheOffNeitherReadsNorWrites(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, nil, WithCache(st, CacheOff))
	mustOK(t, h.judge.Do(context.Background(), userRequest("x")))
	mustOK(t, h.judge.Do(context.Background(), userRequest("x")))
	if h.srv.Calls() != 2 {
		t.Errorf("server calls = %d; want 2 with the cache off", h.srv.Calls())
	}
	if s, _ := st.Stats(context.Background()); s.Entries != 0 {
		t.Errorf("cache off wrote %d entries", s.Entries)
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, nil, WithCache(st, CacheReadWrite))
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Status: 400, ErrorMessage: "bad"}, judgetest.Reply{Content: "fine"}))
	wantError(t, h.judge.Do(context.Background(), userRequest("x")), abi.CodeJudge, "HTTP 400")
	resp := h.judge.Do(context.Background(), userRequest("x"))
	mustOK(t, resp)
	if resp.Content != "fine" || resp.Usage.CacheHit {
		t.Errorf("second try = %+v; want a fresh upstream reply", resp)
	}
}

func TestReplayMissIsCacheMiss(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, nil, WithCache(st, CacheReplay))
	resp := h.judge.Do(context.Background(), userRequest("never recorded"))
	wantError(t, resp, abi.CodeCacheMiss, "judge grader (gpt-test)", "no recorded reply", "replay mode")
	if h.srv.Calls() != 0 {
		t.Errorf("replay mode called the server %d times", h.srv.Calls())
	}
	if resp.Error.Retryable {
		t.Error("a replay miss is marked retryable")
	}
}

func TestRecordThenReplayOffline(t *testing.T) {
	st := openStore(t)
	srv := judgetest.New(t)
	srv.SetDefault(judgetest.JSONScoreReply("recorded", "6", map[string]float64{"6": 0.5, "7": 0.5}))
	cfg := func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema = true, true }

	rec := newHarnessOn(t, srv, srv.URL(), cfg, WithCache(st, CacheReadWrite))
	reqs := []abi.JudgeRequest{scoredRequest(), userRequest("plain one"), userRequest("plain two")}
	recorded := rec.judge.Batch(context.Background(), reqs)
	for _, r := range recorded {
		mustOK(t, r)
	}
	url := srv.URL()
	srv.Close() // offline from here on

	replay := newHarnessOn(t, srv, url, cfg, WithCache(st, CacheReplay))
	replayed := replay.judge.Batch(context.Background(), reqs)
	for i, r := range replayed {
		mustOK(t, r)
		if !r.Usage.CacheHit || r.Content != recorded[i].Content || string(r.JSON) != string(recorded[i].JSON) {
			t.Errorf("replayed %d = %+v; want the recorded reply as a cache hit", i, r)
		}
	}
	if replayed[0].Score == nil || replayed[0].Score.Value != recorded[0].Score.Value {
		t.Errorf("replayed score = %+v; want %+v", replayed[0].Score, recorded[0].Score)
	}
	miss := replay.judge.Do(context.Background(), userRequest("new question"))
	wantError(t, miss, abi.CodeCacheMiss, "no recorded reply")

	// Read-write against the closed server: a hit still works, a miss is a
	// clear connection error.
	rw := newHarnessOn(t, srv, url, func(c *Config) { cfg(c); c.MaxRetries = -1 }, WithCache(st, CacheReadWrite))
	mustOK(t, rw.judge.Do(context.Background(), userRequest("plain one")))
	wantError(t, rw.judge.Do(context.Background(), userRequest("new question")), abi.CodeJudge, "cannot reach")
}

func TestReplayNeedsACache(t *testing.T) {
	_, err := New(testConfig("http://127.0.0.1:1/v1"), WithCache(nil, CacheReplay))
	if err == nil || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("New(replay without cache) err = %v", err)
	}
}

func TestCacheKeyCoversWhatMatters(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs = true })
	key := func(edit func(*abi.JudgeRequest)) string {
		req := schemaRequest("x")
		if edit != nil {
			edit(&req)
		}
		p, err := h.judge.plan(req, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p.key
	}
	base := key(nil)
	if key(func(r *abi.JudgeRequest) { r.Purpose = "other label" }) != base {
		t.Error("purpose changed the cache key; it is a label only")
	}
	if key(func(r *abi.JudgeRequest) {
		r.Schema = []byte(`{"required":["reason","score"],"additionalProperties":false,"type":"object","properties":{"score":{"maximum":10,"type":"integer","minimum":0},"reason":{"type":"string"}}}`)
	}) != base {
		t.Error("reordering schema keys changed the cache key")
	}
	two := 2.0
	for name, edit := range map[string]func(*abi.JudgeRequest){
		"message":      func(r *abi.JudgeRequest) { r.Messages[1].Content = "y" },
		"role":         func(r *abi.JudgeRequest) { r.Messages[0].Role = "user" },
		"schema":       func(r *abi.JudgeRequest) { r.Schema = []byte(`{"type":"object"}`) },
		"schema name":  func(r *abi.JudgeRequest) { r.SchemaName = "other" },
		"temperature":  func(r *abi.JudgeRequest) { r.Temperature = &two },
		"max tokens":   func(r *abi.JudgeRequest) { r.MaxTokens = 10 },
		"top logprobs": func(r *abi.JudgeRequest) { r.TopLogprobs = 4 },
		"score":        func(r *abi.JudgeRequest) { r.Score = &abi.ScoreSpec{Min: 1, Max: 5} },
	} {
		if key(edit) == base {
			t.Errorf("changing the %s kept the cache key", name)
		}
	}
}

// A metric's repeated scorings of one request are calls and cache entries
// of their own: sample 0 is the plain request (its key unchanged), sample k
// never reads sample j's reply, and each replays its own reply.
func TestSamplesAreCachedApart(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema = true, true }, WithCache(st, CacheReadWrite))
	n := 0
	h.srv.SetDefault(judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		n++
		return judgetest.JSONScoreReply("ok", []string{"2", "5", "9"}[(n-1)%3], nil)
	}))
	ctx := context.Background()
	var got []float64
	for k := range 3 {
		r := h.judge.DoSample(ctx, scoredRequest(), k)
		mustOK(t, r)
		got = append(got, r.Score.Value)
	}
	if h.srv.Calls() != 3 || !reflect.DeepEqual(got, []float64{2, 5, 9}) {
		t.Fatalf("3 samples: %d calls, scores %v; want 3 calls, [2 5 9]", h.srv.Calls(), got)
	}
	for k, want := range []float64{2, 5, 9} {
		r := h.judge.DoSample(ctx, scoredRequest(), k)
		if !r.Usage.CacheHit || r.Score.Value != want {
			t.Errorf("sample %d again: hit %v, score %v; want a hit with %v", k, r.Usage.CacheHit, r.Score.Value, want)
		}
	}
	if plain := h.judge.Do(ctx, scoredRequest()); !plain.Usage.CacheHit || plain.Score.Value != 2 {
		t.Errorf("Do = sample 0: hit %v, score %v; want the sample-0 entry", plain.Usage.CacheHit, plain.Score.Value)
	}
	if h.srv.Calls() != 3 {
		t.Errorf("server calls = %d after replays; want 3", h.srv.Calls())
	}
	if r := h.judge.DoSample(ctx, scoredRequest(), -1); r.Error == nil {
		t.Error("a negative sample index was accepted")
	}
}
