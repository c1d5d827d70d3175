package judge

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// The USD of a call with input served from and written to the provider's
// prompt cache, each kind of token at its rate, worked by hand from the
// price table's rows (prices.json).
func TestUsageToUSDWithCachedTokens(t *testing.T) {
	tests := []struct {
		name      string
		anthropic bool
		model     string
		price     Price
		usage     judgetest.Usage
		wantUSD   float64
		// wantCached and wantWritten are what Usage reports.
		wantCached, wantWritten int
		wantSource              string
	}{
		{
			// gpt-4o-mini: 0.15 input, 0.075 cached input, 0.60 output.
			name: "openai cached_tokens at the cached rate", model: "gpt-4o-mini-2024-07-18",
			usage: judgetest.Usage{PromptTokens: 2000, CompletionTokens: 100, CachedTokens: 1536},
			// 464 × 0.15 + 1536 × 0.075 + 100 × 0.60 = 69.6 + 115.2 + 60 = 244.8 per million.
			wantUSD: 244.8e-6, wantCached: 1536, wantSource: "table",
		},
		{
			name: "openai without cached tokens", model: "gpt-4o-mini",
			usage: judgetest.Usage{PromptTokens: 2000, CompletionTokens: 100},
			// 2000 × 0.15 + 100 × 0.60 = 300 + 60.
			wantUSD: 360e-6, wantSource: "table",
		},
		{
			// claude-sonnet-4-5: 3 input, 3.75 cache write, 0.30 cache read, 15 output.
			name: "anthropic cache read and write", anthropic: true, model: "claude-sonnet-4-5-20250929",
			usage: judgetest.Usage{PromptTokens: 3000, CompletionTokens: 50, CachedTokens: 2000, CacheWriteTokens: 500},
			// 500 × 3 + 2000 × 0.30 + 500 × 3.75 + 50 × 15 = 1500 + 600 + 1875 + 750.
			wantUSD: 4725e-6, wantCached: 2000, wantWritten: 500, wantSource: "table",
		},
		{
			name: "config price: cached tokens at the input rate when it sets none", model: "gpt-4o-mini",
			price: Price{InputPerMillion: 1, OutputPerMillion: 2},
			usage: judgetest.Usage{PromptTokens: 2000, CompletionTokens: 100, CachedTokens: 1536},
			// 2000 × 1 + 100 × 2.
			wantUSD: 2200e-6, wantCached: 1536, wantSource: "config",
		},
		{
			name: "config price with a cached rate", model: "gpt-4o-mini",
			price: Price{InputPerMillion: 1, OutputPerMillion: 2, CachedInputPerMillion: 0.5},
			usage: judgetest.Usage{PromptTokens: 2000, CompletionTokens: 100, CachedTokens: 1536},
			// 464 × 1 + 1536 × 0.5 + 100 × 2 = 464 + 768 + 200.
			wantUSD: 1432e-6, wantCached: 1536, wantSource: "config",
		},
		{
			name: "a cached count above the prompt is not believed", model: "gpt-4o-mini",
			usage: judgetest.Usage{PromptTokens: 100, CompletionTokens: 0, CachedTokens: 5000},
			// all 100 cached: 100 × 0.075.
			wantUSD: 7.5e-6, wantCached: 100, wantSource: "table",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edit := func(c *Config) { c.Model, c.Price = tt.model, tt.price }
			var h *harness
			if tt.anthropic {
				h = anthropicHarness(t, edit)
			} else {
				h = newHarness(t, edit)
			}
			u := tt.usage
			h.srv.SetDefault(judgetest.Reply{Content: "ok", Usage: &u})
			resp := h.judge.Do(context.Background(), userRequest("grade this"))
			mustOK(t, resp)
			got := resp.Usage
			if math.Abs(got.USD-tt.wantUSD) > 1e-12 || got.InputTokens != tt.usage.PromptTokens ||
				got.CachedInputTokens != tt.wantCached || got.CacheWriteInputTokens != tt.wantWritten || got.Unpriced {
				t.Errorf("Usage = %+v; want $%v, %d in, %d cached, %d written, priced", got, tt.wantUSD, tt.usage.PromptTokens, tt.wantCached, tt.wantWritten)
			}
			tot := h.judge.Totals()
			if math.Abs(tot.USD-tt.wantUSD) > 1e-12 || tot.CachedInputTokens != int64(tt.wantCached) || tot.CacheWriteInputTokens != int64(tt.wantWritten) {
				t.Errorf("Totals = %+v", tot)
			}
			if info := h.judge.PriceInfo(); !info.Known || info.Source != tt.wantSource {
				t.Errorf("PriceInfo = %+v; want known, from %s", info, tt.wantSource)
			}
		})
	}
}

// A model the table does not know, without price:, has no price: its
// calls cost 0 USD, are marked unpriced, and the judge says why.
func TestUnknownModelHasNoUSD(t *testing.T) {
	h := newHarness(t, nil) // model gpt-test
	h.srv.SetDefault(judgetest.Reply{Content: "ok", Usage: &judgetest.Usage{PromptTokens: 1000, CompletionTokens: 10}})
	resp := h.judge.Do(context.Background(), userRequest("grade this"))
	mustOK(t, resp)
	if resp.Usage.USD != 0 || !resp.Usage.Unpriced || resp.Usage.InputTokens != 1000 {
		t.Errorf("Usage = %+v; want no USD, unpriced, the tokens counted", resp.Usage)
	}
	info := h.judge.PriceInfo()
	if info.Known || !strings.Contains(info.Why, `model "gpt-test" of provider openai is not in the built-in price table`) {
		t.Errorf("PriceInfo = %+v", info)
	}
	if info.BatchDiscount != 0.5 {
		t.Errorf("BatchDiscount = %v; want openai's 0.5 from the table", info.BatchDiscount)
	}
}
