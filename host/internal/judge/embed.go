package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// Embeddings: the judge's second call, for similarity metrics. It goes
// through the same layers as a completion, one text at a time where the
// layer is per text:
//
//	cache (per text) → budget → breaker → size check (per text) → rate limit → concurrency limit → retry → provider
//
// A text's vector is cached under the provider, endpoint, embedding model
// and the text itself (embedKeyVersion), so the same text is never
// embedded twice by one service and model, whatever request carried it.
// The texts a request misses are sent in as few calls as the provider
// takes (embedder.embedBatch). Usage and Totals count the calls, attempts,
// input tokens (the server's, else the estimate, marked usage_unknown)
// and USD at price.embedding_per_million; a request whose texts were all
// cached is a cache hit costing nothing. Replay mode answers from the
// cache alone. A failure fails the whole request (no vectors): a
// similarity over some of the texts is not the similarity asked for.

// embedKeyVersion changes whenever what a cached vector means changes.
const embedKeyVersion = "anvil-embed-v1"

// Embedding is the answer to one Embed: a vector per text, in order, or
// an error; Usage is always filled in.
type Embedding struct {
	Vectors [][]float64
	Usage   abi.Usage
	Error   *abi.Error
}

// embedder is a provider's embeddings API.
type embedder interface {
	// embedBatch is the most texts one call takes.
	embedBatch() int
	// embed makes one HTTP attempt for texts with model. A reply that came
	// but is not usable is a failure (its status set); an error from the
	// transport or the SDK comes back with the HTTP response it got, for
	// Judge.classify.
	embed(ctx context.Context, model string, texts []string) (embedReply, *failure, *http.Response, error)
}

// embedReply is one call's vectors, one per text in order.
type embedReply struct {
	vectors     [][]float64
	inputTokens int
	usageKnown  bool
}

// embedEntry is a cached vector.
type embedEntry struct {
	Vector []float64 `json:"embedding"`
}

// Embed returns a vector per text from the judge's embedding_model. It
// never panics and never returns a Go error: faults are in the result's
// Error (invalid_config without an embedding model or on a provider
// without embeddings, request_too_large, budget_exhausted,
// judge_unavailable, cache_miss in replay mode, judge_error).
func (j *Judge) Embed(ctx context.Context, texts []string) Embedding {
	defer j.notifyUnavailable()
	j.counters.requests.Add(1)
	var out Embedding
	func() {
		defer func() {
			if r := recover(); r != nil {
				out = Embedding{Error: j.errorf(abi.CodeJudge, false, "internal error in embeddings: %v", r)}
			}
		}()
		out = j.embed(ctx, texts)
	}()
	out.Usage.Model = j.cfg.EmbeddingModel
	if out.Error != nil {
		j.counters.errors.Add(1)
		out.Vectors = nil
	}
	return out
}

func (j *Judge) embed(ctx context.Context, texts []string) Embedding {
	emb, ok := j.provider.(embedder)
	switch {
	case j.cfg.EmbeddingModel == "":
		e := j.errorf(abi.CodeInvalidConfig, false, "embeddings need embedding_model in the judge's configuration")
		e.Field = "embedding_model"
		return Embedding{Error: e}
	case !ok || !j.cfg.Provider.HasEmbeddings():
		e := j.errorf(abi.CodeInvalidConfig, false, "provider %s has no embeddings API", j.cfg.Provider)
		e.Field = "provider"
		return Embedding{Error: e}
	case len(texts) == 0:
		return Embedding{Vectors: [][]float64{}, Usage: abi.Usage{CacheHit: true}}
	}
	if limit := judgeconfig.DefaultMaxEmbeddingTokens(j.cfg.EmbeddingModel); limit > 0 {
		for i, t := range texts {
			if n := estimateText(t); n > limit {
				e := j.errorf(abi.CodeRequestTooLarge, false,
					"text %d is about %d tokens (estimated), more than %s takes (%d); not sent", i+1, n, j.cfg.EmbeddingModel, limit)
				return Embedding{Error: e}
			}
		}
	}

	vectors := make([][]float64, len(texts))
	keys := make([]string, len(texts))
	var missing []int // first index of each distinct text the cache lacks
	seen := map[string]int{}
	for i, t := range texts {
		keys[i] = j.embedKey(t)
		if _, dup := seen[keys[i]]; dup {
			continue
		}
		seen[keys[i]] = i
		if v, ok := j.cachedVector(ctx, keys[i]); ok {
			vectors[i] = v
			continue
		}
		missing = append(missing, i)
	}
	start := j.clock.Now()
	var u abi.Usage
	if len(missing) > 0 && j.cacheMode == CacheReplay {
		return Embedding{Error: j.errorf(abi.CodeCacheMiss, false,
			"no recorded embedding for %d of %d texts (first: text %d) and the cache is in replay mode; record them with a read-write run first",
			len(missing), len(texts), missing[0]+1)}
	}
	if len(missing) == 0 {
		j.counters.cacheHits.Add(1)
		u.CacheHit = true
	}
	for lo := 0; lo < len(missing); lo += emb.embedBatch() {
		batch := missing[lo:min(lo+emb.embedBatch(), len(missing))]
		batchTexts := make([]string, len(batch))
		for k, i := range batch {
			batchTexts[k] = texts[i]
		}
		r, err := j.embedCall(ctx, emb, batchTexts, &u)
		if err != nil {
			return Embedding{Usage: u, Error: err}
		}
		for k, i := range batch {
			vectors[i] = r.vectors[k]
			j.recordVector(ctx, keys[i], r.vectors[k])
		}
	}
	for i := range texts {
		if vectors[i] == nil {
			vectors[i] = vectors[seen[keys[i]]]
		}
	}
	if u.Calls > 0 {
		u.LatencyMS = float64(j.clock.Now().Sub(start).Microseconds()) / 1000
	}
	return Embedding{Vectors: vectors, Usage: u}
}

// embedCall makes one upstream embeddings call for texts through the
// lower layers (budget, breaker, rate limit, concurrency, retry), counted
// in u and the judge's totals.
func (j *Judge) embedCall(ctx context.Context, emb embedder, texts []string, u *abi.Usage) (embedReply, *abi.Error) {
	if j.setupErr != nil {
		return embedReply{}, j.setupErr
	}
	if err := j.unavailable(); err != nil {
		return embedReply{}, err
	}
	if j.spendLimit > 0 && j.counters.usd() >= j.spendLimit {
		return embedReply{}, j.errorf(abi.CodeBudget, false, "spend limit of $%.2f reached ($%.4f spent)", j.spendLimit, j.counters.usd())
	}
	estimate := 0
	for _, t := range texts {
		estimate += estimateText(t)
	}
	release, aerr := j.acquire(ctx, estimate)
	if aerr != nil {
		return embedReply{}, aerr
	}
	if err := j.unavailable(); err != nil {
		release()
		return embedReply{}, err
	}
	var r embedReply
	attempts, f := j.retrying(ctx, func(actx context.Context) *failure {
		var f *failure
		var httpResp *http.Response
		var err error
		r, f, httpResp, err = emb.embed(actx, j.cfg.EmbeddingModel, texts)
		if err != nil {
			f = j.classify(actx, httpResp, err)
		}
		if f == nil {
			f = checkVectors(r, len(texts))
		}
		if f != nil {
			f.detail = j.words(f.detail)
		}
		return f
	})
	release()
	j.counters.attempts.Add(int64(attempts))
	j.counters.calls.Add(1)
	u.Calls++
	u.Attempts += attempts
	if f != nil {
		err := j.failureError(f, attempts)
		j.trip(ctx, f, err)
		return embedReply{}, err
	}
	j.trip(ctx, nil, nil)
	in := r.inputTokens
	if !r.usageKnown {
		in = estimate
		j.counters.usageUnknown.Add(1)
		u.UsageUnknown = true
	}
	usd := float64(in) * j.cfg.Price.EmbeddingPerMillion / 1e6
	u.InputTokens += in
	u.USD += usd
	j.counters.inputTokens.Add(int64(in))
	j.counters.addUSD(usd)
	return r, nil
}

// checkVectors refuses a reply whose vectors are not one per text, of one
// length, finite.
func checkVectors(r embedReply, n int) *failure {
	if len(r.vectors) != n {
		return &failure{kind: failUnparseable, detail: fmt.Sprintf("%d vectors for %d texts", len(r.vectors), n)}
	}
	for i, v := range r.vectors {
		if len(v) == 0 || len(v) != len(r.vectors[0]) {
			return &failure{kind: failUnparseable, detail: fmt.Sprintf("vector %d has %d dimensions, vector 1 %d", i+1, len(v), len(r.vectors[0]))}
		}
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return &failure{kind: failUnparseable, detail: fmt.Sprintf("vector %d holds a value that is not finite", i+1)}
			}
		}
	}
	return nil
}

// estimateText estimates one text's tokens as the completions' estimate
// does.
func estimateText(t string) int { return (len(t) + charsPerToken - 1) / charsPerToken }

// embedKey addresses text's vector in the cache.
func (j *Judge) embedKey(text string) string {
	id := j.cfg.Identity()
	b, _ := json.Marshal(struct {
		Version  string `json:"v"`
		Provider string `json:"provider"`
		Endpoint string `json:"endpoint"`
		Model    string `json:"model"`
		Text     string `json:"text"`
	}{embedKeyVersion, string(id.Provider), id.Endpoint, j.cfg.EmbeddingModel, text}, keyOptions)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cachedVector reads key's vector; an unreadable entry is a miss.
func (j *Judge) cachedVector(ctx context.Context, key string) ([]float64, bool) {
	if j.cache == nil || j.cacheMode == CacheOff {
		return nil, false
	}
	raw, ok, err := j.cache.GetJudge(ctx, key)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			j.counters.cacheUnreadable.Add(1)
		}
		return nil, false
	}
	var e embedEntry
	if err := json.Unmarshal(raw, &e); err != nil || len(e.Vector) == 0 {
		j.counters.cacheUnreadable.Add(1)
		return nil, false
	}
	return e.Vector, true
}

// recordVector stores a vector paid for, whatever the caller's context.
func (j *Judge) recordVector(ctx context.Context, key string, v []float64) {
	if j.cache == nil || j.cacheMode != CacheReadWrite {
		return
	}
	raw, err := json.Marshal(embedEntry{Vector: v})
	if err == nil {
		err = j.cache.PutJudge(context.WithoutCancel(ctx), key, j.cfg.EmbeddingModel, raw)
	}
	if err != nil {
		j.log.WarnContext(ctx, "judge cache write failed", "judge", j.cfg.Name, "error", err.Error())
	}
}
