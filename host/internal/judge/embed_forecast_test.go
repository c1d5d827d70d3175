package judge

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// ForecastEmbed prices what Embed would send, sending nothing: distinct
// uncached texts at the estimate (characters/4), in one call; cached ones
// free (unless the cache is not to be used); and Embed's own refusals.
func TestForecastEmbed(t *testing.T) {
	st := openStore(t)
	h := newHarness(t, func(c *Config) {
		c.EmbeddingModel = "text-embedding-3-small"
		c.Price.EmbeddingPerMillion = 20
	}, WithCache(st, CacheReadWrite))
	ctx := context.Background()
	f, err := h.judge.ForecastEmbed(ctx, []string{"alpha", "beta", "alpha"}, true)
	// "alpha" 2 tokens, "beta" 1; the repeat is sent once.
	if err != nil || f.Calls != 1 || f.InputTokens != 3 || f.USD != 3*20/1e6 || h.srv.Calls() != 0 {
		t.Fatalf("cold forecast = %+v, %v (%d sent); want 1 call, 3 tokens", f, err, h.srv.Calls())
	}
	if e := h.judge.Embed(ctx, []string{"alpha"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	if f, _ := h.judge.ForecastEmbed(ctx, []string{"alpha", "beta"}, true); f.Calls != 1 || f.InputTokens != 1 {
		t.Errorf("forecast with alpha cached = %+v; want beta alone", f)
	}
	if f, _ := h.judge.ForecastEmbed(ctx, []string{"alpha"}, true); f.Calls != 0 || f.InputTokens != 0 || f.USD != 0 {
		t.Errorf("all cached = %+v; want nothing", f)
	}
	if f, _ := h.judge.ForecastEmbed(ctx, []string{"alpha"}, false); f.Calls != 1 || f.InputTokens != 2 {
		t.Errorf("without the cache = %+v; want alpha priced", f)
	}

	bare := newHarness(t, nil)
	if _, err := bare.judge.ForecastEmbed(ctx, []string{"x"}, true); err == nil || err.Code != abi.CodeInvalidConfig || err.Field != "embedding_model" {
		t.Errorf("no embedding model: %v; want invalid_config on embedding_model", err)
	}
}
