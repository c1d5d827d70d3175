package judgeconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestValidateProviders(t *testing.T) {
	hot := 1.5
	tests := []struct {
		name string
		cfg  Config
		want []string // each a substring of the error; nil: valid
	}{
		{"openai default", Config{Model: "gpt-4o", BaseURL: "https://api.openai.com/v1"}, nil},
		{"openai with headers", Config{Model: "gpt-4o", BaseURL: "https://gw.acme/v1",
			Headers: map[string]string{"X-Team": "evals", "X-Gateway-Key": "${GATEWAY_KEY}", "Authorization": "Bearer ${TOKEN}"}}, nil},
		{"openai refuses azure keys", Config{Model: "m", BaseURL: "http://x/v1", Deployment: "d", APIVersion: "v"},
			[]string{"deployment: only for provider azure", "api_version: only for provider azure"}},
		{"azure", Config{Provider: ProviderAzure, BaseURL: "https://acme.openai.azure.com", Deployment: "gpt-4o", APIVersion: "2024-10-21"}, nil},
		{"azure without deployment", Config{Provider: ProviderAzure, Model: "gpt-4o", BaseURL: "https://acme.openai.azure.com", APIVersion: "2024-10-21"},
			[]string{"deployment: required for provider azure"}},
		{"azure without version", Config{Provider: ProviderAzure, BaseURL: "https://acme.openai.azure.com", Deployment: "d"},
			[]string{"api_version: required for provider azure"}},
		{"azure without endpoint", Config{Provider: ProviderAzure, Deployment: "d", APIVersion: "v"},
			[]string{"base_url: required (e.g. https://<resource>.openai.azure.com)"}},
		{"azure with deployment path", Config{Provider: ProviderAzure, BaseURL: "https://acme.openai.azure.com/openai/deployments/d", Deployment: "d", APIVersion: "v"},
			[]string{"give the resource endpoint"}},
		{"azure two auths", Config{Provider: ProviderAzure, BaseURL: "https://a.openai.azure.com", Deployment: "d", APIVersion: "v", APIKeyEnv: "K", EntraTokenEnv: "T"},
			[]string{"entra_token_env: give api_key_env or entra_token_env, not both"}},
		{"azure entra over http", Config{Provider: ProviderAzure, BaseURL: "http://a.openai.azure.com", Deployment: "d", APIVersion: "v", EntraTokenEnv: "T"},
			[]string{"entra_token_env: an Entra ID token is only sent over https"}},
		{"anthropic", Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"}, nil},
		{"anthropic without model", Config{Provider: ProviderAnthropic}, []string{"model: required"}},
		{"anthropic logprobs", Config{Provider: ProviderAnthropic, Model: "c", SupportsLogprobs: true, SupportsN: true},
			[]string{"supports_logprobs: provider anthropic returns no log-probabilities", "supports_n: provider anthropic"}},
		{"anthropic temperature", Config{Provider: ProviderAnthropic, Model: "c", Temperature: &hot}, []string{"temperature: 1.5 is outside 0..1"}},
		{"gemini", Config{Provider: ProviderGemini, Model: "gemini-2.5-flash", SupportsLogprobs: true, SupportsN: true}, nil},
		{"gemini without model", Config{Provider: ProviderGemini}, []string{"model: required"}},
		{"gemini refuses azure keys", Config{Provider: ProviderGemini, Model: "gemini-2.5-flash", Deployment: "d"},
			[]string{"deployment: only for provider azure (this judge's provider is gemini)"}},
		{"gemini refuses region", Config{Provider: ProviderGemini, Model: "gemini-2.5-flash", Region: "us-east-1"},
			[]string{"region: only for provider bedrock (this judge's provider is gemini)"}},
		{"bedrock", Config{Provider: ProviderBedrock, Model: "anthropic.claude-3-5-haiku-20241022-v1:0", Region: "us-east-1"}, nil},
		{"anthropic batches", Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", Batch: true}, nil},
		{"gemini refuses batch", Config{Provider: ProviderGemini, Model: "gemini-2.5-flash", Batch: true}, []string{"batch: provider gemini's batch API is not implemented yet"}},
		{"bedrock endpoint override", Config{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0", Region: "eu-west-3", BaseURL: "http://127.0.0.1:9"}, nil},
		{"bedrock without region", Config{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0"},
			[]string{"region: required for provider bedrock"}},
		{"bedrock without model", Config{Provider: ProviderBedrock, Region: "us-east-1"}, []string{"model: required"}},
		{"bedrock bad region", Config{Provider: ProviderBedrock, Model: "m", Region: "us-east-1.evil.example/"},
			[]string{`region: "us-east-1.evil.example/" is not an AWS region name`}},
		{"bedrock api key", Config{Provider: ProviderBedrock, Model: "m", Region: "us-east-1", APIKeyEnv: "AWS_SECRET_ACCESS_KEY"},
			[]string{"api_key_env: not for provider bedrock"}},
		{"bedrock logprobs", Config{Provider: ProviderBedrock, Model: "m", Region: "us-east-1", SupportsLogprobs: true, SupportsN: true},
			[]string{"supports_logprobs: provider bedrock returns no log-probabilities", "supports_n: provider bedrock"}},
		{"openai refuses region", Config{Model: "m", BaseURL: "http://x/v1", Region: "us-east-1"}, []string{"region: only for provider bedrock"}},
		{"unknown provider", Config{Provider: "openia", Model: "m", BaseURL: "https://x"}, []string{`provider: "openia" is not a provider; want one of openai, azure, anthropic, gemini, bedrock`}},
		{"bad header name", Config{Model: "m", BaseURL: "http://x", Headers: map[string]string{"X Team": "a"}}, []string{"headers.X Team: not a valid HTTP header name"}},
		{"reserved header", Config{Model: "m", BaseURL: "http://x", Headers: map[string]string{"content-length": "1"}}, []string{"headers.content-length: set by the client"}},
		{"unclosed reference", Config{Model: "m", BaseURL: "http://x", Headers: map[string]string{"X-K": "${KEY"}}, []string{"headers.X-K:", "without its closing }"}},
		{"bad reference", Config{Model: "m", BaseURL: "http://x", Headers: map[string]string{"X-K": "${1KEY}"}}, []string{"headers.X-K: ${1KEY}: not an environment variable name"}},
		{"header injection", Config{Model: "m", BaseURL: "http://x", Headers: map[string]string{"X-K": "a\r\nHost: evil"}}, []string{"headers.X-K: value holds a control character"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Name = "j"
			err := c.WithDefaults().Validate()
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
		})
	}
}

func TestProviderDefaults(t *testing.T) {
	az := Config{Provider: ProviderAzure, BaseURL: "https://a.openai.azure.com", Deployment: "prod-4o", APIVersion: "2024-10-21"}.WithDefaults()
	if az.Model != "prod-4o" || az.Name != "prod-4o" {
		t.Errorf("azure model %q name %q; want the deployment", az.Model, az.Name)
	}
	an := Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"}.WithDefaults()
	if an.BaseURL != "https://api.anthropic.com" || an.MaxInputTokens != 200_000 {
		t.Errorf("anthropic defaults: %+v", an)
	}
	ge := Config{Provider: ProviderGemini, Model: "gemini-2.5-flash"}.WithDefaults()
	if ge.BaseURL != "https://generativelanguage.googleapis.com" || ge.MaxInputTokens != 1_048_576 || ge.NumberTokens.Resolve(ge.Model) != NumbersDigits {
		t.Errorf("gemini defaults: %+v", ge)
	}
	br := Config{Provider: ProviderBedrock, Model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Region: "eu-central-1"}.WithDefaults()
	if br.BaseURL != "https://bedrock-runtime.eu-central-1.amazonaws.com" || br.MaxInputTokens != 200_000 {
		t.Errorf("bedrock defaults: %+v", br)
	}
	for model, want := range map[string]int{"amazon.nova-pro-v1:0": 300_000, "meta.llama3-1-70b-instruct-v1:0": 128_000, "mistral.mistral-large-2407-v1:0": 128_000} {
		if got := DefaultMaxInputTokens(model); got != want {
			t.Errorf("DefaultMaxInputTokens(%q) = %d; want %d", model, got, want)
		}
	}
	if p := (Config{Model: "m"}).WithDefaults().Provider; p != ProviderOpenAI {
		t.Errorf("default provider %q", p)
	}
}

func TestParseHeaderValue(t *testing.T) {
	tests := []struct {
		in   string
		want []HeaderPart
	}{
		{"evals", []HeaderPart{{Text: "evals"}}},
		{"${GATEWAY_KEY}", []HeaderPart{{Env: "GATEWAY_KEY"}}},
		{"Bearer ${T}!", []HeaderPart{{Text: "Bearer "}, {Env: "T"}, {Text: "!"}}},
		{"cost $5 $$ {x}", []HeaderPart{{Text: "cost $5 $ {x}"}}},
		{"$${NOT}", []HeaderPart{{Text: "${NOT}"}}},
		{"", nil},
	}
	for _, tc := range tests {
		got, err := ParseHeaderValue(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseHeaderValue(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		cfg  Config
		want Identity
	}{
		{Config{Model: "gpt-4o", BaseURL: "https://user:secret@API.OpenAI.com/v1/?x=1#f"},
			Identity{Provider: ProviderOpenAI, Model: "gpt-4o", Endpoint: "https://api.openai.com/v1"}},
		{Config{Provider: ProviderAzure, BaseURL: "https://Acme.openai.azure.com/", Deployment: "prod 4o", APIVersion: "2024-10-21"},
			Identity{Provider: ProviderAzure, Model: "prod 4o", Endpoint: "https://acme.openai.azure.com/openai/deployments/prod%204o?api-version=2024-10-21"}},
		{Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"},
			Identity{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", Endpoint: "https://api.anthropic.com"}},
		{Config{Provider: ProviderGemini, Model: "gemini-2.5-flash"},
			Identity{Provider: ProviderGemini, Model: "gemini-2.5-flash", Endpoint: "https://generativelanguage.googleapis.com"}},
		{Config{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0", Region: "us-west-2"},
			Identity{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0", Endpoint: "https://bedrock-runtime.us-west-2.amazonaws.com?region=us-west-2"}},
		{Config{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0", Region: "us-west-2", BaseURL: "https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com"},
			Identity{Provider: ProviderBedrock, Model: "amazon.nova-pro-v1:0", Endpoint: "https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com?region=us-west-2"}},
	}
	for _, tc := range tests {
		if got := tc.cfg.WithDefaults().Identity(); got != tc.want {
			t.Errorf("Identity = %+v; want %+v", got, tc.want)
		}
	}
}
