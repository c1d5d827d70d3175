package judgeconfig

import (
	"strings"
	"testing"
)

func TestValidateNamesFields(t *testing.T) {
	hot := 3.0
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"ok", func(*Config) {}, nil},
		{"no model", func(c *Config) { c.Model = "" }, []string{"model: required"}},
		{"no url", func(c *Config) { c.BaseURL = "" }, []string{"base_url: required"}},
		{"bad url", func(c *Config) { c.BaseURL = "api.openai.com" }, []string{"base_url:", "not an http(s) URL"}},
		{"key in env field", func(c *Config) { c.APIKeyEnv = "sk-abc def" }, []string{"api_key_env:"}},
		{"negative limits", func(c *Config) { c.MaxConcurrency = -1; c.RequestsPerMinute = -1; c.TokensPerMinute = -2 },
			[]string{"max_concurrency:", "requests_per_minute:", "tokens_per_minute:"}},
		{"price", func(c *Config) { c.Price.InputPerMillion = -1 }, []string{"price.input_per_million:"}},
		{"cache prices", func(c *Config) { c.Price.CachedInputPerMillion = -1; c.Price.CacheWritePerMillion = -1 },
			[]string{"price.cached_input_per_million:", "price.cache_write_per_million:"}},
		{"top logprobs", func(c *Config) { c.MaxTopLogprobs = 21 }, []string{"max_top_logprobs: 21 is outside 0..20"}},
		{"temperature", func(c *Config) { c.Temperature = &hot }, []string{"temperature: 3 is outside 0..2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Name: "j", BaseURL: "http://localhost:8080/v1", Model: "m"}
			c = c.WithDefaults()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted a bad config")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), `judge "j"`) {
				t.Errorf("error %q does not name the judge", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := Config{Model: "m", BaseURL: "http://x/v1"}.WithDefaults()
	if c.Name != "m" || c.Timeout.Std() != DefaultTimeout || c.MaxConcurrency != DefaultMaxConcurrency ||
		c.MaxRetries != DefaultMaxRetries || c.MaxTopLogprobs != DefaultMaxTopLogprobs {
		t.Errorf("WithDefaults = %+v", c)
	}
	if n := (Config{Model: "m", MaxRetries: -1}).WithDefaults().MaxRetries; n != 0 {
		t.Errorf("max_retries -1 became %d; want 0 (no retries)", n)
	}
}

func TestDefaultMaxInputTokens(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"gpt-4o-mini", 128_000},
		{"gpt-4o-2024-08-06", 128_000},
		{"openai/gpt-4o", 128_000},
		{"ft:gpt-4o-mini-2024-07-18:acme::abc123", 128_000},
		{"gpt-4.1-nano", 1_047_576},
		{"gpt-4", 8_192},
		{"gpt-4-turbo", 128_000},
		{"gpt-3.5-turbo-0125", 16_385},
		{"o1-mini", 128_000},
		{"o3-mini", 200_000},
		{"o4-mini", 200_000},
		{"gpt-5-mini", 272_000},
		{"claude-3-5-sonnet-20241022", 200_000},
		{"anthropic.claude-3-haiku-20240307-v1:0", 200_000},
		{"gemini-2.0-flash", 1_048_576},
		{"meta-llama/Llama-3.1-8B-Instruct", 128_000},
		{"llama3.3:70b", 128_000},
		{"llama3:8b", 8_192},
		{"mistral-large-latest", 128_000},
		{"mixtral-8x7b-instruct", 65_536},
		{"Qwen/Qwen2.5-7B-Instruct", 131_072},
		{"deepseek-chat", 128_000},
		// Unknown: no check; the server has the last word.
		{"my-finetune", 0},
		{"gpt-test", 0},
		{"", 0},
	}
	for _, tc := range tests {
		if got := DefaultMaxInputTokens(tc.model); got != tc.want {
			t.Errorf("DefaultMaxInputTokens(%q) = %d; want %d", tc.model, got, tc.want)
		}
	}
}

// A price that sets a rate is the judge's; its cached and cache-write
// rates default to the input rate.
func TestPriceDefaults(t *testing.T) {
	if (Price{}).Set() {
		t.Error("an empty price is set")
	}
	p := Price{InputPerMillion: 2, OutputPerMillion: 8}
	if !p.Set() {
		t.Error("a price with rates is not set")
	}
	if got := p.WithDefaults(); got != (Price{InputPerMillion: 2, OutputPerMillion: 8, CachedInputPerMillion: 2, CacheWritePerMillion: 2}) {
		t.Errorf("WithDefaults = %+v", got)
	}
	p.CachedInputPerMillion = 0.5
	if got := p.WithDefaults(); got.CachedInputPerMillion != 0.5 || got.CacheWritePerMillion != 2 {
		t.Errorf("WithDefaults = %+v", got)
	}
}
