package pricing

import (
	"strings"
	"testing"
)

func TestBuiltinTableParses(t *testing.T) {
	tab, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"openai", "azure", "anthropic", "gemini", "bedrock"} {
		if len(tab.Rows(p)) == 0 {
			t.Errorf("no rows for provider %s", p)
		}
		if pr, ok := tab.Provider(p); !ok || pr.BatchDiscount != 0.5 {
			t.Errorf("provider %s: %+v, %v; want batch_discount 0.5", p, pr, ok)
		}
	}
	for _, r := range tab.Rows("anthropic") {
		if r.CacheWrite == nil || r.CachedInput == nil {
			t.Errorf("anthropic %s: cache_write and cached_input must be set (Anthropic prices both)", r.Model)
		}
	}
}

func TestLookup(t *testing.T) {
	tab, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider, model string
		want            string // the row's model; "" for no price
	}{
		{"openai", "gpt-4o", "gpt-4o"},
		{"openai", "GPT-4o", "gpt-4o"},
		{"openai", "gpt-4o-2024-08-06", "gpt-4o"},
		{"openai", "gpt-4o-2024-05-13", "gpt-4o-2024-05-13"}, // its own, older price
		{"openai", "gpt-4o-mini", "gpt-4o-mini"},
		{"openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"openai", "gpt-4-0613", "gpt-4"},
		{"openai", "gpt-4-turbo-2024-04-09", "gpt-4-turbo"},
		{"openai", "gpt-3.5-turbo-0125", "gpt-3.5-turbo"},
		{"openai", "o1-mini-2024-09-12", "o1-mini"},
		{"openai", "o3-2025-04-16", "o3"},
		{"openai", "gpt-4o-audio-preview", ""},        // another model, not a gpt-4o snapshot
		{"openai", "ft:gpt-4o-mini:acme::abc123", ""}, // fine-tunes cost more
		{"openai", "llama3.1:8b", ""},
		{"openai", "claude-sonnet-4-20250514", ""}, // another provider's model
		{"azure", "gpt-4o", "gpt-4o"},
		{"azure", "my-deployment", ""},
		{"anthropic", "claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"anthropic", "claude-3-5-sonnet-latest", "claude-3-5-sonnet"},
		{"anthropic", "claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"anthropic", "claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"anthropic", "claude-opus-4-0", "claude-opus-4-0"},
		{"anthropic", "claude-opus-4-9", ""}, // a single digit is a version, not a snapshot
		{"gemini", "gemini-2.5-flash", "gemini-2.5-flash"},
		{"gemini", "models/gemini-2.5-flash", "gemini-2.5-flash"},
		{"gemini", "gemini-2.5-flash-lite", "gemini-2.5-flash-lite"},
		{"gemini", "gemini-2.0-flash-001", "gemini-2.0-flash"},
		{"gemini", "gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"},
		{"gemini", "gemini-2.5-flash-image", ""},
		{"bedrock", "anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic.claude-3-5-sonnet"},
		{"bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic.claude-sonnet-4"},
		{"bedrock", "amazon.nova-pro-v1:0", "amazon.nova-pro"},
		{"bedrock", "meta.llama3-1-70b-instruct-v1:0", "meta.llama3-1-70b-instruct"},
		{"bedrock", "claude-sonnet-4", ""},
		{"vertex", "gemini-2.5-flash", ""}, // a provider the table does not have
	}
	for _, tt := range tests {
		r, ok := tab.Lookup(tt.provider, tt.model)
		if ok != (tt.want != "") || r.Model != tt.want {
			t.Errorf("Lookup(%s, %s) = %q, %v; want %q", tt.provider, tt.model, r.Model, ok, tt.want)
		}
	}
}

func TestRowPrice(t *testing.T) {
	tab, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tab.Lookup("anthropic", "claude-sonnet-4-20250514")
	p := r.Price()
	if p.InputPerMillion != 3 || p.CachedInputPerMillion != 0.3 || p.CacheWritePerMillion != 3.75 || p.OutputPerMillion != 15 {
		t.Errorf("claude-sonnet-4 price = %+v", p)
	}
	r, _ = tab.Lookup("openai", "gpt-4-0613")
	p = r.Price()
	// No cached rate: cached input costs input, as OpenAI bills it.
	if p.InputPerMillion != 30 || p.CachedInputPerMillion != 30 || p.CacheWritePerMillion != 30 || p.OutputPerMillion != 60 {
		t.Errorf("gpt-4 price = %+v", p)
	}
}

func TestParseRejects(t *testing.T) {
	const prov = `{"provider":"p","batch_discount":0.5,"source":"https://x.example/p","as_of":"2025-01-01"}`
	row := func(s string) string { return `{"providers":[` + prov + `],"models":[` + s + `]}` }
	tests := []struct {
		name, data, want string
	}{
		{"unknown member", row(`{"provider":"p","model":"m","input":1,"output":1,"source":"https://x.example","as_of":"2025-01-01","cost":1}`), `unknown`},
		{"negative", row(`{"provider":"p","model":"m","input":-1,"output":1,"source":"https://x.example","as_of":"2025-01-01"}`), `models[0] (p m): input -1`},
		{"no rates", row(`{"provider":"p","model":"m","source":"https://x.example","as_of":"2025-01-01"}`), `input and output are missing`},
		{"no source", row(`{"provider":"p","model":"m","input":1,"output":1,"as_of":"2025-01-01"}`), `source "" is not an https URL`},
		{"bad date", row(`{"provider":"p","model":"m","input":1,"output":1,"source":"https://x.example","as_of":"June 2025"}`), `as_of "June 2025"`},
		{"twice", row(`{"provider":"p","model":"M","input":1,"output":1,"source":"https://x.example","as_of":"2025-01-01"},{"provider":"p","model":"m","input":1,"output":1,"source":"https://x.example","as_of":"2025-01-01"}`), `models[1] (p m): the model is listed twice`},
		{"unknown provider", row(`{"provider":"q","model":"m","input":1,"output":1,"source":"https://x.example","as_of":"2025-01-01"}`), `provider "q" is not in providers`},
		{"discount", `{"providers":[{"provider":"p","batch_discount":1,"source":"https://x.example","as_of":"2025-01-01"}],"models":[]}`, `batch_discount 1 is outside`},
		{"repeated name", `{"providers":[],"providers":[]}`, `duplicate`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v; want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(builtin)
	f.Add([]byte(`{"providers":[],"models":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(data)
		if err != nil {
			return
		}
		for _, r := range tab.Rows("") {
			got, ok := tab.Lookup(r.Provider, r.Model)
			if !ok || got.Input != r.Input || got.Output != r.Output {
				t.Fatalf("row %s %s does not look itself up: %+v %v", r.Provider, r.Model, got, ok)
			}
			if p := r.Price(); p.InputPerMillion < 0 || p.CachedInputPerMillion < 0 {
				t.Fatalf("negative price %+v", p)
			}
		}
	})
}

// BenchmarkBuiltin is the parse each judge pays once, when it is built.
func BenchmarkBuiltin(b *testing.B) {
	for b.Loop() {
		if _, err := Builtin(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupSnapshot is a lookup that misses the exact rows and
// matches by snapshot suffix.
func BenchmarkLookupSnapshot(b *testing.B) {
	tab, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ok := tab.Lookup("anthropic", "claude-sonnet-4-5-20250929"); !ok {
			b.Fatal("no row")
		}
	}
}
