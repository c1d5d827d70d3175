package cli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/internal/testkit"
)

// litellmConfig serves the judge's two routes with LiteLLM's mock
// responses: an Anthropic-format model and an Azure-format deployment.
const litellmConfig = `model_list:
  - model_name: claude-sonnet-4-5
    litellm_params:
      model: anthropic/claude-sonnet-4-5
      api_key: not-used
      mock_response: '{"reason": "mocked", "score": 7}'
  - model_name: quickstart-4o
    litellm_params:
      model: openai/gpt-4o-mini
      api_key: not-used
      mock_response: '{"reason": "mocked", "score": 7}'
general_settings:
  master_key: %s
`

// TestProvidersAgainstLiteLLM runs the quickstart's helpfulness metric
// through the anthropic and azure providers against LiteLLM's proxy, an
// independent implementation of both wire formats (its /v1/messages and
// /openai/deployments/… routes), with the proxy's master key as the
// canary. LiteLLM comes from PyPI (pip install 'litellm[proxy]'); name
// the executable in $ANVIL_LITELLM or put litellm on PATH. Set
// ANVIL_LITELLM_E2E=1 to make a missing LiteLLM a failure (CI).
func TestProvidersAgainstLiteLLM(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	bin := os.Getenv("ANVIL_LITELLM")
	if bin == "" {
		bin, _ = exec.LookPath("litellm")
	}
	if bin == "" {
		if os.Getenv("ANVIL_LITELLM_E2E") == "1" {
			t.Fatal("no LiteLLM: pip install 'litellm[proxy]', then set $ANVIL_LITELLM or put litellm on PATH")
		}
		t.Skip("no LiteLLM (pip install 'litellm[proxy]'; $ANVIL_LITELLM names it)")
	}
	base := startLiteLLM(t, bin)
	for _, tc := range []struct{ name, judge, keyEnv string }{
		{"anthropic", "    provider: anthropic\n    base_url: " + base + "\n    model: claude-sonnet-4-5\n    max_tokens: 256\n", "ANTHROPIC_API_KEY"},
		{"azure", "    provider: azure\n    base_url: " + base + "\n    deployment: quickstart-4o\n    api_version: \"2024-10-21\"\n    model: gpt-4o-mini\n", "AZURE_OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := providerQuickstart(t, tc.judge)
			onlyHelpfulness(t, dir)
			r := runBinary(t, dir, []string{tc.keyEnv + "=" + canaryKey}, "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--no-progress")
			if r.code != exitOK {
				t.Fatalf("quickstart through LiteLLM: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
			if m := metricOf(t, s, "helpfulness"); m.Scored != 12 || m.Mean == nil || *m.Mean != 0.7 {
				t.Fatalf("helpfulness = %+v", m)
			}
			assertNoCanary(t, dir, "out", r)
		})
	}
}

// onlyHelpfulness keeps the quickstart's helpfulness metric alone: its
// steps are given, so every call is a score that LiteLLM's one mock
// response answers.
func onlyHelpfulness(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "anvil.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	metrics, start, end := strings.Index(s, "\nmetrics:\n"), strings.Index(s, "  - name: helpfulness"), strings.Index(s, "  # Deterministic")
	if metrics < 0 || start < metrics || end < start {
		t.Fatal("the quickstart's metrics are not as this test expects")
	}
	if err := os.WriteFile(path, []byte(s[:metrics]+"\nmetrics:\n"+s[start:end]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startLiteLLM starts the proxy on a free loopback port with the canary
// as its master key and returns its base URL once it is live.
func startLiteLLM(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(fmt.Sprintf(litellmConfig, canaryKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "litellm.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "config.yaml", "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = append(os.Environ(), "LITELLM_LOG=ERROR")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// The proxy takes seconds to import its dependencies; ask until it is live.
	deadline := time.Now().Add(3 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if resp, err := http.Get(base + "/health/liveliness"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("LiteLLM did not come up in 3 minutes:\n%s", out)
		}
	}
	return base
}
