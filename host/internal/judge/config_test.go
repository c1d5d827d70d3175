package judge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

const yamlConfig = `
name: grader
base_url: https://api.example.com/v1/
model: gpt-4o-mini
api_key_env: EXAMPLE_KEY
timeout: 45s
max_concurrency: 16
requests_per_minute: 500
tokens_per_minute: 200000
price: {input_per_million: 0.15, output_per_million: 0.6}
supports_logprobs: true
supports_json_schema: true
temperature: 0
`

func TestConfigFromYAML(t *testing.T) {
	var c Config
	if err := yaml.Unmarshal([]byte(yamlConfig), &c); err != nil {
		t.Fatal(err)
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Timeout.Std() != 45*time.Second || c.MaxConcurrency != 16 || c.RequestsPerMinute != 500 ||
		c.Price.OutputPerMillion != 0.6 || !c.SupportsLogprobs || c.Temperature == nil || *c.Temperature != 0 {
		t.Errorf("parsed %+v", c)
	}
	if c.BaseURL != "https://api.example.com/v1" {
		t.Errorf("BaseURL = %q; want the trailing slash trimmed", c.BaseURL)
	}
	// Defaults fill what YAML left out.
	if c.MaxTopLogprobs != 20 || c.MaxRetries != 4 {
		t.Errorf("defaults: max_top_logprobs %d, max_retries %d", c.MaxTopLogprobs, c.MaxRetries)
	}
	// Round trip through JSON keeps the duration readable.
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"timeout":"45s"`) {
		t.Errorf("JSON = %s, %v", b, err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil || back.Timeout != c.Timeout {
		t.Errorf("JSON round trip timeout = %v, %v", back.Timeout, err)
	}
}

func TestDurationForms(t *testing.T) {
	tests := []struct {
		yaml, json string
		want       time.Duration
		bad        bool
	}{
		{yaml: `30s`, json: `"30s"`, want: 30 * time.Second},
		{yaml: `1m30s`, json: `"1m30s"`, want: 90 * time.Second},
		{yaml: `2`, json: `2`, want: 2 * time.Second},
		{yaml: `0.25`, json: `0.25`, want: 250 * time.Millisecond},
		{yaml: `soon`, json: `"soon"`, bad: true},
		{yaml: `[1]`, json: `[1]`, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.yaml, func(t *testing.T) {
			var y struct {
				D Duration `yaml:"d"`
			}
			yerr := yaml.Unmarshal([]byte("d: "+tc.yaml), &y)
			var j struct {
				D Duration `json:"d"`
			}
			jerr := json.Unmarshal([]byte(`{"d": `+tc.json+`}`), &j)
			if tc.bad {
				if yerr == nil || jerr == nil {
					t.Fatalf("accepted %s: yaml err %v, json err %v", tc.yaml, yerr, jerr)
				}
				return
			}
			if yerr != nil || jerr != nil || y.D.Std() != tc.want || j.D.Std() != tc.want {
				t.Fatalf("yaml %v (%v), json %v (%v); want %v", y.D, yerr, j.D, jerr, tc.want)
			}
		})
	}
}

func TestCacheModeNames(t *testing.T) {
	for _, m := range []CacheMode{CacheReadWrite, CacheOff, CacheReplay} {
		got, ok := ParseCacheMode(m.String())
		if !ok || got != m {
			t.Errorf("ParseCacheMode(%q) = %v, %v", m.String(), got, ok)
		}
	}
	if _, ok := ParseCacheMode("sometimes"); ok {
		t.Error("ParseCacheMode accepted nonsense")
	}
}

func TestEstimateTokens(t *testing.T) {
	req := userRequest(strings.Repeat("x", 400)) // system message: 24 chars
	got := EstimateTokens(req)
	want := tokensPerReplyBase + (tokensPerMessage + 6) + (tokensPerMessage + 100)
	if got != want {
		t.Errorf("EstimateTokens = %d; want %d", got, want)
	}
	req.Schema = []byte(verdictSchema)
	if EstimateTokens(req) <= got {
		t.Error("a schema did not add to the estimate")
	}
}
