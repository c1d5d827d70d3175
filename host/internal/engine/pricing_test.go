package engine_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/judgetest"
)

// cachingJudge is fakeJudge whose every reply reports usage: input
// tokens, of which some served from the prompt cache (and, on Anthropic's
// wire, some written to it), and output tokens.
func cachingJudge(t *testing.T, u judgetest.Usage, opts ...judgetest.Option) *judgetest.Server {
	t.Helper()
	s := judgetest.New(t, opts...)
	enginetest.GEval(s, &u)
	return s
}

// summaryJSON is what summary.json says of the run's cost.
type summaryJSON struct {
	CachedInputShare *float64 `json:"cached_input_share"`
	Unpriced         []string `json:"unpriced"`
	Judge            struct {
		Calls             int     `json:"calls"`
		InputTokens       int     `json:"input_tokens"`
		CachedInputTokens int     `json:"cached_input_tokens"`
		CacheWriteTokens  int     `json:"cache_write_input_tokens"`
		USD               float64 `json:"usd"`
		Unpriced          int     `json:"unpriced"`
	} `json:"judge"`
	Metrics []struct {
		Scored             int      `json:"scored"`
		USDPerVerifiedCase *float64 `json:"usd_per_verified_case"`
		CachedInputShare   *float64 `json:"cached_input_share"`
		Judge              struct {
			Calls int     `json:"calls"`
			USD   float64 `json:"usd"`
		} `json:"judge"`
	} `json:"metrics"`
	Judges []struct {
		Price struct {
			Source     string  `json:"source"`
			TableModel string  `json:"table_model"`
			URL        string  `json:"url"`
			AsOf       string  `json:"as_of"`
			Input      float64 `json:"input_per_million"`
			Why        string  `json:"why"`
		} `json:"price"`
	} `json:"judges"`
}

func readSummary(t *testing.T, dir string) summaryJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summaryJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func nearUSD(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// A run through the fake OpenAI and Anthropic servers, whose replies
// report cached (and written) input: summary.json gives the cached share
// of input and the USD per verified case, priced from the price table's
// row by hand. Four calls: G-Eval's steps, then three cases scored (c4
// has no expected output and is skipped).
func TestSummaryCachedShareAndUSDPerVerifiedCase(t *testing.T) {
	tests := []struct {
		name, judge string
		opts        []judgetest.Option
		usage       judgetest.Usage
		perCall     float64 // USD of one call, by hand
		share       float64
		written     int
	}{
		{
			name:  "openai",
			judge: "model: gpt-4o-mini-2024-07-18\n    supports_logprobs: true\n    supports_json_schema: true",
			usage: judgetest.Usage{PromptTokens: 1000, CompletionTokens: 20, CachedTokens: 768},
			// gpt-4o-mini: 232 × 0.15 + 768 × 0.075 + 20 × 0.60 = 34.8 + 57.6 + 12 per million.
			perCall: 104.4e-6, share: 0.768,
		},
		{
			name:  "anthropic",
			judge: "provider: anthropic\n    model: claude-haiku-4-5-20251001",
			opts:  []judgetest.Option{judgetest.Anthropic(), judgetest.WithAPIKey("test-key")},
			usage: judgetest.Usage{PromptTokens: 2000, CompletionTokens: 40, CachedTokens: 1500, CacheWriteTokens: 100},
			// claude-haiku-4-5: 400 × 1 + 1500 × 0.10 + 100 × 1.25 + 40 × 5 = 400 + 150 + 125 + 200.
			perCall: 875e-6, share: 0.75, written: 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := cachingJudge(t, tt.usage, tt.opts...)
			cfg := fmt.Sprintf("version: 1\ndataset: cases.jsonl\njudges:\n  default:\n    base_url: %s\n    api_key_env: ANVIL_TEST_KEY\n    %s\ndefaults:\n  judge: default\nmetrics:\n%s",
				srv.URL(), tt.judge, correctness)
			e := newEnv(t, cfg)
			e.run(t, "off", engine.RunOptions{})
			s := readSummary(t, e.out)
			if s.Judge.Calls != 4 || len(s.Metrics) != 1 || s.Metrics[0].Scored != 3 || s.Metrics[0].Judge.Calls != 4 {
				t.Fatalf("summary: %+v; want 4 calls, 3 cases scored", s)
			}
			if !nearUSD(s.Judge.USD, 4*tt.perCall) || !nearUSD(s.Metrics[0].Judge.USD, 4*tt.perCall) {
				t.Errorf("usd = %v (metric %v); want %v", s.Judge.USD, s.Metrics[0].Judge.USD, 4*tt.perCall)
			}
			if s.Judge.CachedInputTokens != 4*tt.usage.CachedTokens || s.Judge.CacheWriteTokens != 4*tt.written {
				t.Errorf("cached %d, written %d; want %d, %d", s.Judge.CachedInputTokens, s.Judge.CacheWriteTokens, 4*tt.usage.CachedTokens, 4*tt.written)
			}
			if c := s.CachedInputShare; c == nil || *c != tt.share {
				t.Errorf("cached_input_share = %v; want %v", c, tt.share)
			}
			if c := s.Metrics[0].CachedInputShare; c == nil || *c != tt.share {
				t.Errorf("metric cached_input_share = %v; want %v", c, tt.share)
			}
			// The steps' call is the metric's too: four calls over three cases.
			want := math.Round(4*tt.perCall/3*1e6) / 1e6
			if p := s.Metrics[0].USDPerVerifiedCase; p == nil || *p != want {
				t.Errorf("usd_per_verified_case = %v; want %v", p, want)
			}
			if tt.name == "anthropic" {
				for _, r := range srv.Requests() {
					if len(r.CacheBreakpoints) != 1 || r.CacheBreakpoints[0] != "system.0" {
						t.Errorf("request %d: cache breakpoints %v; want the system prompt's", r.Seq, r.CacheBreakpoints)
					}
				}
			}
			if p := s.Judges[0].Price; p.Source != "table" || p.URL == "" || p.AsOf == "" || p.TableModel == "" || len(s.Unpriced) != 0 {
				t.Errorf("judge price = %+v, unpriced %v; want the table's row, sourced and dated", p, s.Unpriced)
			}
		})
	}
}

// A model the price table does not know, without price:, has no USD: the
// summary says why, counts its requests unpriced and gives no USD per
// case, rather than a cost of zero.
func TestSummaryUnknownModelHasNoUSD(t *testing.T) {
	srv := cachingJudge(t, judgetest.Usage{PromptTokens: 1000, CompletionTokens: 20})
	cfg := strings.Replace(configFor(srv.URL(), true, correctness), "    price: {input_per_million: 1, output_per_million: 2}\n", "", 1)
	e := newEnv(t, cfg)
	e.run(t, "off", engine.RunOptions{})
	s := readSummary(t, e.out)
	if s.Judge.USD != 0 || s.Judge.Unpriced != 4 || s.Metrics[0].USDPerVerifiedCase != nil {
		t.Errorf("judge %+v, per case %v; want no USD, 4 requests unpriced, no USD per case", s.Judge, s.Metrics[0].USDPerVerifiedCase)
	}
	if len(s.Unpriced) != 1 || !strings.Contains(s.Unpriced[0], `judge default: model "judge-model" of provider openai is not in the built-in price table`) {
		t.Errorf("unpriced = %q", s.Unpriced)
	}
	if p := s.Judges[0].Price; p.Source != "none" || p.Why == "" {
		t.Errorf("judge price = %+v", p)
	}
}

// A configured price: overrides the table.
func TestSummaryConfiguredPriceOverridesTheTable(t *testing.T) {
	srv := cachingJudge(t, judgetest.Usage{PromptTokens: 1000, CompletionTokens: 20, CachedTokens: 500})
	cfg := strings.Replace(configFor(srv.URL(), true, correctness), "model: judge-model", "model: gpt-4o", 1)
	cfg = strings.Replace(cfg, "price: {input_per_million: 1, output_per_million: 2}", "price: {input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.5}", 1)
	e := newEnv(t, cfg)
	e.run(t, "off", engine.RunOptions{})
	s := readSummary(t, e.out)
	// 500 × 1 + 500 × 0.5 + 20 × 2 = 790 per million, four calls.
	if !nearUSD(s.Judge.USD, 4*790e-6) {
		t.Errorf("usd = %v; want %v", s.Judge.USD, 4*790e-6)
	}
	if p := s.Judges[0].Price; p.Source != "config" || p.Input != 1 || p.TableModel != "" {
		t.Errorf("judge price = %+v; want the config's", p)
	}
}
