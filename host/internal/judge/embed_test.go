package judge

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func wantVectors(t *testing.T, e Embedding, texts ...string) {
	t.Helper()
	if e.Error != nil {
		t.Fatalf("Embed: %v", e.Error)
	}
	if len(e.Vectors) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(e.Vectors), len(texts))
	}
	for i, text := range texts {
		if !reflect.DeepEqual(e.Vectors[i], judgetest.EmbeddingOf(text)) {
			t.Errorf("vector %d = %v; want the embedding of %q", i, e.Vectors[i], text)
		}
	}
}

// One call embeds the distinct texts a request misses; the vectors are
// cached per text (a later request with one new text sends only it),
// counted and priced.
func TestEmbedCachesPerTextAndAccounts(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) {
		c.EmbeddingModel = "text-embedding-3-small"
		c.Price.EmbeddingPerMillion = 20
	}, WithCache(st, CacheReadWrite))
	e := h.judge.Embed(context.Background(), []string{"alpha", "beta", "alpha"})
	wantVectors(t, e, "alpha", "beta", "alpha")
	reqs := h.srv.Requests()
	if len(reqs) != 1 || !reqs[0].Embedding || !reflect.DeepEqual(reqs[0].Inputs, []string{"alpha", "beta"}) || reqs[0].Model != "text-embedding-3-small" {
		t.Fatalf("requests = %+v", reqs)
	}
	if reqs[0].Header.Get("Authorization") != "Bearer "+testKey {
		t.Error("the key was not sent as a bearer token")
	}
	// judgetest counts (len+3)/4 tokens a text: 2 + 1.
	if e.Usage.Calls != 1 || e.Usage.Attempts != 1 || e.Usage.InputTokens != 3 || e.Usage.CacheHit || e.Usage.Model != "text-embedding-3-small" ||
		e.Usage.USD != 3*20/1e6 {
		t.Errorf("usage = %+v", e.Usage)
	}

	e = h.judge.Embed(context.Background(), []string{"beta", "gamma"})
	wantVectors(t, e, "beta", "gamma")
	if reqs := h.srv.Requests(); len(reqs) != 2 || !reflect.DeepEqual(reqs[1].Inputs, []string{"gamma"}) {
		t.Errorf("the second request sent %+v; want gamma alone", reqs[len(reqs)-1].Inputs)
	}
	e = h.judge.Embed(context.Background(), []string{"gamma", "alpha"})
	wantVectors(t, e, "gamma", "alpha")
	if h.srv.Calls() != 2 || !e.Usage.CacheHit || e.Usage.Calls != 0 || e.Usage.USD != 0 {
		t.Errorf("all cached: %d server calls, usage %+v", h.srv.Calls(), e.Usage)
	}
	tot := h.judge.Totals()
	if tot.Calls != 2 || tot.InputTokens != 5 || tot.CacheHits != 1 || tot.Requests != 3 {
		t.Errorf("totals = %+v", tot)
	}

	// Another judge on another endpoint, same model, same store: its own
	// vectors.
	other := newHarness(t, func(c *Config) { c.EmbeddingModel = "text-embedding-3-small" }, WithCache(st, CacheReadWrite))
	wantVectors(t, other.judge.Embed(context.Background(), []string{"alpha"}), "alpha")
	if other.srv.Calls() != 1 {
		t.Error("a vector cached for one endpoint answered another")
	}
}

// Replay answers from the cache alone; a miss is cache_miss.
func TestEmbedReplay(t *testing.T) {
	st := openStore(t)
	rw := newHarness(t, func(c *Config) { c.EmbeddingModel = "text-embedding-3-small" }, WithCache(st, CacheReadWrite))
	wantVectors(t, rw.judge.Embed(context.Background(), []string{"a"}), "a")
	cfg := testConfig(rw.srv.URL())
	cfg.EmbeddingModel = "text-embedding-3-small"
	replay, err := New(cfg, WithAPIKey(testKey), WithCache(st, CacheReplay))
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, replay.Embed(context.Background(), []string{"a"}), "a")
	e := replay.Embed(context.Background(), []string{"a", "b"})
	if e.Error == nil || e.Error.Code != abi.CodeCacheMiss || !strings.Contains(e.Error.Message, "text 2") || rw.srv.Calls() != 1 {
		t.Errorf("replay miss = %+v (%d calls)", e.Error, rw.srv.Calls())
	}
}

// Retries honour Retry-After; a spend limit holds; errors keep the
// server's words; a missing embedding_model and a text over the model's
// limit are refused before anything is sent.
func TestEmbedLimits(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EmbeddingModel = "text-embedding-3-small"; c.MaxRetries = 2 })
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "3"}, judgetest.Reply{}))
	e := h.judge.Embed(context.Background(), []string{"x"})
	wantVectors(t, e, "x")
	if e.Usage.Attempts != 2 || e.Usage.Calls != 1 || !reflect.DeepEqual(h.clock.Sleeps(), []time.Duration{3 * time.Second}) {
		t.Errorf("usage %+v, waits %v", e.Usage, h.clock.Sleeps())
	}

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens"})
	e = h.judge.Embed(context.Background(), []string{"y"})
	if e.Error == nil || !strings.Contains(e.Error.Message, "request rejected (HTTP 400): This model's maximum context length") || e.Vectors != nil {
		t.Errorf("error = %+v", e.Error)
	}

	none := newHarness(t, nil)
	if e := none.judge.Embed(context.Background(), []string{"x"}); e.Error == nil || e.Error.Code != abi.CodeInvalidConfig ||
		!strings.Contains(e.Error.Message, "embedding_model") || none.srv.Calls() != 0 {
		t.Errorf("no embedding model: %+v", e.Error)
	}
	big := newHarness(t, func(c *Config) { c.EmbeddingModel = "text-embedding-3-small" })
	if e := big.judge.Embed(context.Background(), []string{"ok", strings.Repeat("word ", 8000)}); e.Error == nil ||
		e.Error.Code != abi.CodeRequestTooLarge || !strings.Contains(e.Error.Message, "text 2") || big.srv.Calls() != 0 {
		t.Errorf("too large: %+v", e.Error)
	}

	spend := newHarness(t, func(c *Config) {
		c.EmbeddingModel = "text-embedding-3-small"
		c.Price.EmbeddingPerMillion = 1e6 // a dollar a token
	}, WithSpendLimit(1))
	wantVectors(t, spend.judge.Embed(context.Background(), []string{"four"}), "four")
	if e := spend.judge.Embed(context.Background(), []string{"more"}); e.Error == nil || e.Error.Code != abi.CodeBudget || spend.srv.Calls() != 1 {
		t.Errorf("past the spend limit: %+v", e.Error)
	}
}

// Azure: the embedding deployment in the path, the api-key header.
func TestEmbedAzure(t *testing.T) {
	srv := judgetest.New(t, judgetest.Azure("gpt-4o", "2024-10-21"), judgetest.AzureEmbeddings("embed-small"), judgetest.WithAPIKey(testKey))
	h := newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		c.Provider, c.Deployment, c.APIVersion, c.Model, c.EmbeddingModel = "azure", "gpt-4o", "2024-10-21", "", "embed-small"
	})
	wantVectors(t, h.judge.Embed(context.Background(), []string{"a", "b"}), "a", "b")
	if r := srv.Requests()[0]; r.Header.Get("Api-Key") != testKey || r.Model != "embed-small" {
		t.Errorf("request: model %q", r.Model)
	}
}

// Gemini: batchEmbedContents through genai, each request naming the
// model; no token counts, so the estimate is marked usage_unknown.
func TestEmbedGemini(t *testing.T) {
	h := geminiHarness(t, func(c *Config) { c.EmbeddingModel = "gemini-embedding-001" })
	e := h.judge.Embed(context.Background(), []string{"a", "bb"})
	wantVectors(t, e, "a", "bb")
	r := h.srv.Requests()[0]
	if r.Model != "gemini-embedding-001" || !reflect.DeepEqual(r.Inputs, []string{"a", "bb"}) || r.Header.Get("X-Goog-Api-Key") != testKey {
		t.Errorf("request: model %q inputs %v", r.Model, r.Inputs)
	}
	if !e.Usage.UsageUnknown || e.Usage.InputTokens != 2 || e.Usage.Calls != 1 {
		t.Errorf("usage = %+v", e.Usage)
	}
	h.srv.SetDefault(judgetest.Reply{Status: 429, ErrorMessage: "Resource has been exhausted", RetryAfter: "5"})
	if e := h.judge.Embed(context.Background(), []string{"c"}); e.Error == nil || !strings.Contains(e.Error.Message, "Resource has been exhausted") {
		t.Errorf("error = %+v", e.Error)
	}
}

// Bedrock: InvokeModel with Titan's body, one text a call, signed; and
// Cohere's, several texts a call.
func TestEmbedBedrock(t *testing.T) {
	h := bedrockHarness(t, func(c *Config) { c.EmbeddingModel = "amazon.titan-embed-text-v2:0" })
	e := h.judge.Embed(context.Background(), []string{"a", "bb"})
	wantVectors(t, e, "a", "bb")
	reqs := h.srv.Requests()
	if len(reqs) != 2 || reqs[0].Model != "amazon.titan-embed-text-v2:0" || !strings.Contains(reqs[0].Header.Get("Authorization"), "/eu-west-3/bedrock/") {
		t.Errorf("requests = %d", len(reqs))
	}
	if e.Usage.Calls != 2 || e.Usage.UsageUnknown || e.Usage.InputTokens != 2 {
		t.Errorf("usage = %+v", e.Usage)
	}

	c := bedrockHarness(t, func(c *Config) { c.EmbeddingModel = "cohere.embed-english-v3" })
	wantVectors(t, c.judge.Embed(context.Background(), []string{"x", "y", "z"}), "x", "y", "z")
	if c.srv.Calls() != 1 {
		t.Errorf("cohere: %d calls; want one for three texts", c.srv.Calls())
	}

	u := bedrockHarness(t, func(c *Config) { c.EmbeddingModel = "acme.embed-v1" })
	if e := u.judge.Embed(context.Background(), []string{"x"}); e.Error == nil || !strings.Contains(e.Error.Message, "Titan") || u.srv.Calls() != 0 {
		t.Errorf("unknown body: %+v", e.Error)
	}
}

// FuzzDecodeEmbeddings: no body panics a decoder, and what passes
// checkVectors is one finite vector per text, of one length.
func FuzzDecodeEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":1,"embedding":[0.5]},{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":2}}`))
	f.Add([]byte(`{"embeddings":[{"values":[1,2]},{"values":[3,4]}]}`))
	f.Add([]byte(`{"embedding":[1,2],"inputTextTokenCount":3}`))
	f.Add([]byte(`{"embeddings":[[1],[2]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(r embedReply, fail *failure, n int) {
			if fail != nil || checkVectors(r, n) != nil {
				return
			}
			for _, v := range r.vectors {
				if len(v) != len(r.vectors[0]) || len(v) == 0 {
					t.Fatalf("vectors %v passed the check", r.vectors)
				}
			}
		}
		r, fail := decodeOpenAIEmbeddings("application/json", body, 2)
		check(r, fail, 2)
		r, fail = decodeGeminiEmbeddings("application/json", body)
		check(r, fail, 2)
		r, fail = decodeBedrockEmbeddings(bodyTitan, body)
		check(r, fail, 1)
		r, fail = decodeBedrockEmbeddings(bodyCohere, body)
		check(r, fail, 2)
	})
}
