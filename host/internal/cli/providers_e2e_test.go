package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/judgetest"
)

// canaryKey is a distinctive credential: it must appear in no output of a
// run (stdout, stderr, results, summary, reports, the store), even when the
// server echoes it back in an error.
const canaryKey = "canary-KEY-5b7f2e91c0d4a8f3"

// canaryHeader is a header secret from the environment, held to the same rule.
const canaryHeader = "canary-HDR-0e4d9a1b77c3f562"

// providerQuickstart is the quickstart with its judge block replaced by judge.
func providerQuickstart(t *testing.T, judge string) string {
	t.Helper()
	dir := quickstart(t)
	path := filepath.Join(dir, "anvil.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start, end := strings.Index(s, "judges:\n"), strings.Index(s, "\nplugins:")
	if start < 0 || end < start {
		t.Fatal("the quickstart's config has no judges block before plugins")
	}
	s = s[:start] + "judges:\n  default:\n" + judge + s[end:]
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// assertNoCanary greps every output of a run in dir (out the output
// directory) and the run's stdout and stderr for the secrets.
func assertNoCanary(t *testing.T, dir, out string, r result) {
	t.Helper()
	secrets := []string{canaryKey, canaryHeader}
	for _, secret := range secrets {
		if strings.Contains(r.stdout, secret) || strings.Contains(r.stderr, secret) {
			t.Errorf("a secret appears in the run's output:\n%s\n%s", r.stdout, r.stderr)
		}
	}
	seen := 0
	for _, root := range []string{filepath.Join(dir, out), filepath.Join(dir, ".anvil")} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("read %s: %v", path, err)
				return nil
			}
			seen++
			for _, secret := range secrets {
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("a secret appears in %s", path)
				}
			}
			return nil
		})
	}
	for _, name := range []string{"results.jsonl", "summary.json", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, out, name)); err != nil {
			t.Errorf("the run wrote no %s: %v", name, err)
		}
	}
	if seen == 0 {
		t.Error("no output files were checked")
	}
}

// echoKeys makes srv fail every call quoting the credentials it was sent,
// as some servers do.
func echoKeys(srv *judgetest.Server) {
	srv.SetDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		return judgetest.Reply{Status: 400, ErrorMessage: "bad credentials: " + r.Header.Get("Authorization") + " " +
			r.Header.Get("Api-Key") + " " + r.Header.Get("X-Api-Key") + " " + r.Header.Get("X-Goog-Api-Key") + " " + r.Header.Get("X-Gateway-Key")}
	}))
}

// providerE2E runs the quickstart through a provider's fake server: a
// passing run, then a run whose every call fails with the server quoting
// the credentials; neither leaks them.
func providerE2E(t *testing.T, srv *judgetest.Server, judge string, env []string, check func(*testing.T, []judgetest.RecordedRequest)) (dir string) {
	geval(srv)
	dir = providerQuickstart(t, judge)
	env = append(env, "GATEWAY_KEY="+canaryHeader)
	r := runBinary(t, dir, env, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitOK {
		t.Fatalf("quickstart: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "REPLAYED") {
		t.Fatalf("the run replayed the recording instead of calling the judge:\n%s", r.stdout)
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if c := metricOf(t, s, "correctness"); c.Scored != 12 || s.Judge.Calls == 0 {
		t.Errorf("correctness = %+v (judge %+v)", c, s.Judge)
	}
	check(t, srv.Requests())
	assertNoCanary(t, dir, "out", r)

	// estimate counts what run called, and calls nothing.
	before := srv.Calls()
	er := runBinary(t, dir, env, "estimate", "-c", "anvil.yaml", "--json")
	var est engine.EstimateReport
	if err := json.Unmarshal([]byte(er.stdout), &est); err != nil || er.code != 0 {
		t.Fatalf("estimate: exit %d %v\n%s", er.code, err, er.stderr)
	}
	if got := est.Total.JudgeCalls + est.Total.CachedCalls; int(got) != int(s.Judge.Calls) || srv.Calls() != before {
		t.Errorf("estimate counts %d calls (%d made while estimating); run made %d", got, srv.Calls()-before, s.Judge.Calls)
	}

	srv.Reset()
	echoKeys(srv)
	r = runBinary(t, dir, env, "run", "-c", "anvil.yaml", "-o", "fail", "--cache", "off", "--no-progress")
	if r.code == exitOK {
		t.Fatalf("a run whose every judge call fails passed:\n%s", r.stdout)
	}
	if srv.Calls() == 0 {
		t.Fatal("the failing run made no judge call")
	}
	assertNoCanary(t, dir, "fail", r)
	b, _ := os.ReadFile(filepath.Join(dir, "fail", "results.jsonl"))
	if !bytes.Contains(b, []byte("bad credentials")) || !bytes.Contains(b, []byte("[redacted]")) {
		t.Errorf("the failing run's results do not carry the server's words, redacted:\n%.2000s", b)
	}
	return dir
}

// TestProviderOpenAIHeadersE2E: an OpenAI-compatible gateway with a team
// header and a gateway key from the environment.
func TestProviderOpenAIHeadersE2E(t *testing.T) {
	srv := judgetest.New(t, judgetest.WithAPIKey(canaryKey))
	judge := "    base_url: " + srv.URL() + "\n    model: gpt-4o-mini\n    api_key_env: GW_OPENAI_KEY\n" +
		"    supports_logprobs: true\n    supports_json_schema: true\n" +
		"    headers: {X-Team: evals, X-Gateway-Key: \"${GATEWAY_KEY}\"}\n"
	providerE2E(t, srv, judge, []string{"GW_OPENAI_KEY=" + canaryKey}, func(t *testing.T, reqs []judgetest.RecordedRequest) {
		for _, r := range reqs {
			if r.Header.Get("X-Team") != "evals" || r.Header.Get("X-Gateway-Key") != canaryHeader {
				t.Fatalf("a request without the configured headers: X-Team %q", r.Header.Get("X-Team"))
			}
		}
	})
}

// TestProviderAzureE2E: an Azure OpenAI deployment with the api-key header.
func TestProviderAzureE2E(t *testing.T) {
	srv := judgetest.New(t, judgetest.Azure("quickstart-4o", "2024-10-21"), judgetest.WithAPIKey(canaryKey))
	judge := "    provider: azure\n    base_url: " + srv.URL() + "\n    deployment: quickstart-4o\n    api_version: \"2024-10-21\"\n" +
		"    model: gpt-4o-mini\n    supports_logprobs: true\n    supports_json_schema: true\n" +
		"    headers: {X-Gateway-Key: \"${GATEWAY_KEY}\"}\n"
	providerE2E(t, srv, judge, []string{"AZURE_OPENAI_API_KEY=" + canaryKey}, func(t *testing.T, reqs []judgetest.RecordedRequest) {
		if len(reqs) == 0 || reqs[0].Model != "quickstart-4o" {
			t.Fatalf("requests %d; the body does not name the deployment", len(reqs))
		}
	})
}

// TestProviderAnthropicE2E: Anthropic's Messages API; scores are read as
// written (no logprobs), with the cause recorded.
func TestProviderAnthropicE2E(t *testing.T) {
	srv := judgetest.New(t, judgetest.Anthropic(), judgetest.WithAPIKey(canaryKey))
	judge := "    provider: anthropic\n    base_url: " + srv.URL() + "\n    model: claude-sonnet-4-5\n" +
		"    max_tokens: 1024\n    headers: {X-Gateway-Key: \"${GATEWAY_KEY}\"}\n"
	dir := providerE2E(t, srv, judge, []string{"ANTHROPIC_API_KEY=" + canaryKey}, func(t *testing.T, reqs []judgetest.RecordedRequest) {
		tools := 0
		for _, r := range reqs {
			if r.ToolChoice != "" {
				tools++
			}
		}
		if tools == 0 {
			t.Errorf("none of %d requests forced the structured-output tool", len(reqs))
		}
	})
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if c := metricOf(t, s, "correctness"); c.ScoreModes["raw"] != 12 {
		t.Errorf("correctness score modes %v; want 12 raw (no logprobs)", c.ScoreModes)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out", "results.jsonl"))
	if !bytes.Contains(b, []byte("provider anthropic returns none")) {
		t.Error("results do not record why scores are not weighted")
	}
}

// TestProviderGeminiE2E: the Gemini API through google.golang.org/genai;
// scores weighted by the logprobs it returns, structured output as
// responseJsonSchema.
func TestProviderGeminiE2E(t *testing.T) {
	srv := judgetest.New(t, judgetest.Gemini(), judgetest.WithAPIKey(canaryKey))
	judge := "    provider: gemini\n    base_url: " + srv.URL() + "\n    model: gemini-2.5-flash\n" +
		"    supports_logprobs: true\n    max_top_logprobs: 5\n    headers: {X-Gateway-Key: \"${GATEWAY_KEY}\"}\n"
	dir := providerE2E(t, srv, judge, []string{"GEMINI_API_KEY=" + canaryKey}, func(t *testing.T, reqs []judgetest.RecordedRequest) {
		schemas := 0
		for _, r := range reqs {
			if r.Header.Get("X-Goog-Api-Key") != canaryKey || r.Header.Get("X-Gateway-Key") != canaryHeader {
				t.Fatal("a request without the key in x-goog-api-key or the configured header")
			}
			if r.ResponseFormat != nil && r.ResponseFormat.Type == "json_schema" {
				schemas++
			}
		}
		if schemas == 0 {
			t.Errorf("none of %d requests carried responseJsonSchema", len(reqs))
		}
	})
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if c := metricOf(t, s, "correctness"); c.ScoreModes["weighted"] != 12 {
		t.Errorf("correctness score modes %v; want 12 weighted", c.ScoreModes)
	}
}

// canaryAccessKeyID is a Bedrock judge's access key ID: it travels in
// every request's Authorization header (the secret never does), and must
// appear in no output either.
const canaryAccessKeyID = "AKIDCANARY7c1e9b3f5a"

// TestProviderBedrockE2E: Bedrock's Converse API through aws-sdk-go-v2,
// credentials from the AWS chain (here the environment), every request's
// SigV4 signature verified by the fake; scores read as written (no
// logprobs), with the cause recorded.
func TestProviderBedrockE2E(t *testing.T) {
	srv := judgetest.New(t, judgetest.Bedrock("eu-west-3", canaryAccessKeyID, canaryKey))
	judge := "    provider: bedrock\n    region: eu-west-3\n    base_url: " + srv.URL() + "\n" +
		"    model: anthropic.claude-3-5-haiku-20241022-v1:0\n    max_tokens: 1024\n    headers: {X-Gateway-Key: \"${GATEWAY_KEY}\"}\n"
	env := []string{"AWS_ACCESS_KEY_ID=" + canaryAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + canaryKey, "AWS_EC2_METADATA_DISABLED=true"}
	dir := providerE2E(t, srv, judge, env, func(t *testing.T, reqs []judgetest.RecordedRequest) {
		tools := 0
		for _, r := range reqs {
			if r.ToolChoice != "" {
				tools++
			}
			if r.Header.Get("X-Gateway-Key") != canaryHeader {
				t.Fatal("a request without the configured header")
			}
		}
		if tools == 0 {
			t.Errorf("none of %d requests forced the structured-output tool", len(reqs))
		}
	})
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if c := metricOf(t, s, "correctness"); c.ScoreModes["raw"] != 12 {
		t.Errorf("correctness score modes %v; want 12 raw (no logprobs)", c.ScoreModes)
	}
	for _, out := range []string{"out", "fail", ".anvil"} {
		filepath.WalkDir(filepath.Join(dir, out), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(canaryAccessKeyID)) {
					t.Errorf("the access key ID appears in %s", path)
				}
			}
			return nil
		})
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out", "results.jsonl"))
	if !bytes.Contains(b, []byte("provider bedrock returns none")) {
		t.Error("results do not record why scores are not weighted")
	}
}

// TestProviderValidateNamesMissingSettings: validate names what a
// provider's judge lacks, with the judge and the field.
func TestProviderValidateNamesMissingSettings(t *testing.T) {
	for _, tc := range []struct{ judge, want string }{
		{"    provider: bedrock\n    model: amazon.nova-pro-v1:0\n", `judge "default": region: required for provider bedrock`},
		{"    provider: bedrock\n    region: us-east-1\n", `judge "default": model: required`},
		{"    provider: gemini\n", `judge "default": model: required`},
		{"    provider: bedrock\n    region: us-east-1\n    model: m\n    api_key_env: AWS_SECRET_ACCESS_KEY\n", "api_key_env: not for provider bedrock"},
		{"    provider: anthropic\n    model: claude-sonnet-4-5\n    embedding_model: e\n", "embedding_model: provider anthropic has no embeddings API"},
	} {
		dir := providerQuickstart(t, tc.judge)
		r := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--no-dataset")
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.judge, r.code, r.stderr, tc.want)
		}
	}
}
