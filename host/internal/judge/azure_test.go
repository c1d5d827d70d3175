package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func azureConfig(endpoint string) func(*Config) {
	return func(c *Config) {
		c.Provider = "azure"
		c.BaseURL = endpoint
		c.Model = ""
		c.Deployment = "prod-gpt-4o"
		c.APIVersion = "2024-10-21"
		c.APIKeyEnv = "AZURE_OPENAI_API_KEY"
	}
}

func TestAzureWire(t *testing.T) {
	srv := judgetest.New(t, judgetest.Azure("prod-gpt-4o", "2024-10-21"), judgetest.WithAPIKey(testKey))
	h := newHarnessOn(t, srv, srv.URL(), azureConfig(srv.URL()))
	resp := h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema)})
	mustOK(t, resp)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "prod-gpt-4o" || r.Header.Get("Api-Key") != testKey || r.Header.Get("Authorization") != "" {
		t.Errorf("model %q, api-key set %v, authorization set %v", r.Model, r.Header.Get("Api-Key") != "", r.Header.Get("Authorization") != "")
	}
	if resp.Usage.Model != "prod-gpt-4o" || resp.Usage.Calls != 1 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestAzureEntraToken(t *testing.T) {
	srv := judgetest.New(t, judgetest.Azure("prod-gpt-4o", "2024-10-21"), judgetest.AzureEntra(), judgetest.WithAPIKey(testKey), judgetest.WithTLS())
	h := newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		azureConfig(srv.URL())(c)
		c.APIKeyEnv, c.EntraTokenEnv = "", "AZURE_OPENAI_AD_TOKEN"
	}, WithHTTPClient(srv.Client()))
	mustOK(t, h.judge.Do(context.Background(), userRequest("grade")))
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization set %v, not the token", got != "")
	}
}

// What the fake Azure resource refuses, the judge reports in Azure's own
// words, naming the fix.
func TestAzureRefusals(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"wrong deployment", func(c *Config) { c.Deployment = "gpt-4o" }, []string{"not found (HTTP 404)", "check base_url, deployment and api_version", "The API deployment for this resource does not exist"}},
		{"wrong api-version", func(c *Config) { c.APIVersion = "2023-01-01" }, []string{"not found (HTTP 404)", "Resource not found"}},
		{"key as bearer", func(c *Config) { c.APIKeyEnv, c.EntraTokenEnv = "", "T" }, []string{"authentication failed (HTTP 401)", "invalid subscription key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t, judgetest.Azure("prod-gpt-4o", "2024-10-21"), judgetest.WithAPIKey(testKey), judgetest.WithTLS())
			h := newHarnessOn(t, srv, srv.URL(), func(c *Config) { azureConfig(srv.URL())(c); tc.edit(c) }, WithHTTPClient(srv.Client()))
			wantError(t, h.judge.Do(context.Background(), userRequest("grade")), abi.CodeJudge, tc.want...)
		})
	}
}

// openai-go v3 sends an Azure credential only over https (plain http to a
// loopback address when asked) and never beside a second credential
// header; it refuses them at each request, as an error the retry layer
// took for a network failure (5 attempts, then "cannot reach"). The judge
// refuses them once, when it is built, naming the field.
func TestAzureCredentialTransportRefused(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" : New succeeds
	}{
		{"https", func(c *Config) { c.BaseURL = "https://acme.openai.azure.com" }, ""},
		{"http loopback", func(c *Config) { c.BaseURL = "http://127.0.0.1:8080" }, ""},
		{"http localhost", func(c *Config) { c.BaseURL = "http://localhost:8080" }, ""},
		{"http ::1", func(c *Config) { c.BaseURL = "http://[::1]:8080" }, ""},
		{"http remote", func(c *Config) { c.BaseURL = "http://acme.openai.azure.com" },
			`judge "grader": base_url: "http://acme.openai.azure.com": an Azure credential is only sent over https`},
		{"authorization header", func(c *Config) { c.Headers = map[string]string{"Authorization": "Bearer x"} },
			`judge "grader": headers.Authorization: an Azure judge sends its credential (AZURE_OPENAI_API_KEY) itself`},
		{"api-key header", func(c *Config) { c.Headers = map[string]string{"api-key": "x"} },
			`judge "grader": headers.Api-Key: an Azure judge sends its credential`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("https://acme.openai.azure.com")
			azureConfig("https://acme.openai.azure.com")(&cfg)
			tc.edit(&cfg)
			_, err := New(cfg, WithAPIKey(testKey))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: %v; want an error containing %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), testKey):
				t.Fatalf("the key appears in the error: %v", err)
			}
		})
	}
	// Without a credential the header is the gateway's own, and is sent.
	cfg := testConfig("http://gateway.internal")
	azureConfig("http://gateway.internal")(&cfg)
	cfg.Headers = map[string]string{"Authorization": "Bearer x"}
	if _, err := New(cfg, WithGetenv(func(string) string { return "" })); err != nil {
		t.Fatalf("New without a credential: %v", err)
	}
}
