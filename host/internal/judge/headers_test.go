package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// gatewaySecret is a header secret tests put in the environment; like the
// key, it must never show up in an error or a log line.
const gatewaySecret = "gw-SECRET-canary-9f8e7d6c"

func gatewayEnv(name string) string {
	if name == "GATEWAY_KEY" {
		return gatewaySecret
	}
	return ""
}

func TestConfiguredHeadersAreSent(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Headers = map[string]string{"X-Team": "evals", "X-Gateway-Key": "${GATEWAY_KEY}", "X-Bearer": "Bearer ${GATEWAY_KEY}", "X-Price": "$$5"}
	}, WithGetenv(gatewayEnv))
	mustOK(t, h.judge.Do(context.Background(), userRequest("hello")))
	got := h.srv.Requests()[0].Header
	for name, want := range map[string]string{
		"X-Team": "evals", "X-Gateway-Key": gatewaySecret, "X-Bearer": "Bearer " + gatewaySecret, "X-Price": "$5",
		"Authorization": "Bearer " + testKey,
	} {
		if g := got.Get(name); g != want {
			t.Errorf("header %s = %q; want %q", name, g, want)
		}
	}
}

// A header whose variable is unset fails every call before it is sent,
// naming the header and the variable, never a value.
func TestHeaderVariableUnset(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Headers = map[string]string{"X-Gateway-Key": "${GATEWAY_KEY}"} },
		WithGetenv(func(string) string { return "" }))
	resp := h.judge.Do(context.Background(), userRequest("hello"))
	wantError(t, resp, abi.CodeInvalidConfig, "judge grader (gpt-test): headers.X-Gateway-Key takes $GATEWAY_KEY, which is not set")
	if resp.Error.Field != "headers.X-Gateway-Key" {
		t.Errorf("field %q", resp.Error.Field)
	}
	if n := h.srv.Calls(); n != 0 {
		t.Errorf("%d calls sent without the header", n)
	}
}

// A server that echoes what it was sent cannot get a header secret into an
// error or the log.
func TestHeaderSecretRedacted(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Headers = map[string]string{"X-Gateway-Key": "${GATEWAY_KEY}"}
		c.MaxRetries = 1
	}, WithGetenv(gatewayEnv))
	h.srv.SetDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		return judgetest.Reply{Status: 503, ErrorMessage: "gateway refused key " + r.Header.Get("X-Gateway-Key")}
	}))
	resp := h.judge.Do(context.Background(), userRequest("hello"))
	wantError(t, resp, abi.CodeJudge, "gateway refused key [redacted]")
	if strings.Contains(resp.Error.Message, gatewaySecret) || strings.Contains(h.logs.String(), gatewaySecret) {
		t.Errorf("the header secret leaked: %s\n%s", resp.Error.Message, h.logs.String())
	}
}

// The cache key names the provider and the endpoint for every provider
// but openai, whose keys stay what they were.
func TestCacheKeyIdentity(t *testing.T) {
	req := userRequest("same prompt")
	key := func(cfg Config) string {
		t.Helper()
		j, err := New(cfg, WithAPIKey("k"))
		if err != nil {
			t.Fatal(err)
		}
		p, e := j.plan(req, 0)
		if e != nil {
			t.Fatal(e)
		}
		return p.key
	}
	openaiA := key(Config{Model: "gpt-4o", BaseURL: "https://api.openai.com/v1"})
	openaiB := key(Config{Model: "gpt-4o", BaseURL: "https://gw.acme/v1", Headers: map[string]string{"X-Team": "evals"}})
	azureA := key(Config{Provider: "azure", BaseURL: "https://a.openai.azure.com", Deployment: "gpt-4o", APIVersion: "2024-10-21"})
	azureB := key(Config{Provider: "azure", BaseURL: "https://b.openai.azure.com", Deployment: "gpt-4o", APIVersion: "2024-10-21"})
	azureV := key(Config{Provider: "azure", BaseURL: "https://a.openai.azure.com", Deployment: "gpt-4o", APIVersion: "2025-01-01"})
	if openaiA != openaiB {
		t.Errorf("openai keys differ by endpoint: they predate providers and must not change")
	}
	for name, k := range map[string]string{"azure a": azureA, "azure b": azureB, "azure version": azureV} {
		if k == openaiA {
			t.Errorf("%s shares openai's key", name)
		}
	}
	if azureA == azureB || azureA == azureV {
		t.Errorf("azure keys do not name the endpoint")
	}
}

// A variable whose value would split the header is refused like an unset
// one, before anything is sent, without quoting the value.
func TestHeaderVariableWithLineBreak(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Headers = map[string]string{"X-Gateway-Key": "${GATEWAY_KEY}"} },
		WithGetenv(func(string) string { return "abc\r\nX-Evil: 1" }))
	resp := h.judge.Do(context.Background(), userRequest("hello"))
	wantError(t, resp, abi.CodeInvalidConfig, "headers.X-Gateway-Key takes $GATEWAY_KEY, whose value holds a line break")
	if strings.Contains(resp.Error.Message, "X-Evil") || h.srv.Calls() != 0 {
		t.Errorf("message %q, %d calls", resp.Error.Message, h.srv.Calls())
	}
}
