package judge

import (
	"context"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// EmbedForecast is what an Embed of some texts would cost, found without
// calling anything: `estimate` prices embeddings with it, and a plugin's
// judge-token budget is charged InputTokens before the call is sent.
type EmbedForecast struct {
	// Calls is the upstream calls Embed would make: the texts the cache
	// lacks, in batches of what the provider takes; 0 when all are cached.
	Calls int
	// InputTokens is the estimate of the uncached texts' tokens.
	InputTokens int
	USD         float64
}

// EstimateEmbedTokens estimates the tokens of texts as Embed's budget
// checks do, before anything is known of the cache.
func EstimateEmbedTokens(texts []string) int {
	n := 0
	for _, t := range texts {
		n += estimateText(t)
	}
	return n
}

// ForecastEmbed forecasts Embed(texts) as it would go now: the same
// refusals (no embedding model, a provider without embeddings, a text
// over the model's limit) and the same cache lookups, read only. Without
// useCache every text is priced as uncached: a keyless judge replaying a
// recording is priced as the keyed run would cost.
func (j *Judge) ForecastEmbed(ctx context.Context, texts []string, useCache bool) (EmbedForecast, *abi.Error) {
	emb, ok := j.provider.(embedder)
	switch {
	case j.cfg.EmbeddingModel == "":
		e := j.errorf(abi.CodeInvalidConfig, false, "embeddings need embedding_model in the judge's configuration")
		e.Field = "embedding_model"
		return EmbedForecast{}, e
	case !ok || !j.cfg.Provider.HasEmbeddings():
		e := j.errorf(abi.CodeInvalidConfig, false, "provider %s has no embeddings API", j.cfg.Provider)
		e.Field = "provider"
		return EmbedForecast{}, e
	}
	if limit := judgeconfig.DefaultMaxEmbeddingTokens(j.cfg.EmbeddingModel); limit > 0 {
		for i, t := range texts {
			if n := estimateText(t); n > limit {
				return EmbedForecast{}, j.errorf(abi.CodeRequestTooLarge, false,
					"text %d is about %d tokens (estimated), more than %s takes (%d); not sent", i+1, n, j.cfg.EmbeddingModel, limit)
			}
		}
	}
	var f EmbedForecast
	missing := 0
	seen := map[string]bool{}
	for _, t := range texts {
		key := j.embedKey(t)
		if seen[key] {
			continue
		}
		seen[key] = true
		if useCache {
			if _, ok := j.cachedVector(ctx, key); ok {
				continue
			}
		}
		missing++
		f.InputTokens += estimateText(t)
	}
	if missing > 0 {
		f.Calls = (missing + emb.embedBatch() - 1) / emb.embedBatch()
	}
	f.USD = float64(f.InputTokens) * j.cfg.Price.EmbeddingPerMillion / 1e6
	return f, nil
}

// EmbeddingModel is the judge's embedding model ("" without one).
func (j *Judge) EmbeddingModel() string { return j.cfg.EmbeddingModel }
