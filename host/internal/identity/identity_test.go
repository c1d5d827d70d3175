package identity

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

func baseJudge() judgeconfig.Config {
	return judgeconfig.Config{Name: "default", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY"}.WithDefaults()
}

// An Azure judge's identity names its API, deployment and api-version; an
// openai judge's API is what it was before providers existed.
func TestAzureIdentityNamesDeployment(t *testing.T) {
	t.Parallel()
	az := func(deployment, version string) Judge {
		return OfJudge(judgeconfig.Config{Name: "az", Provider: judgeconfig.ProviderAzure, BaseURL: "https://a.openai.azure.com",
			Deployment: deployment, APIVersion: version}.WithDefaults(), SourceAPI, "")
	}
	a := az("prod-4o", "2024-10-21")
	if a.API != "azure-openai-chat-completions" || a.BaseURL != "https://a.openai.azure.com/openai/deployments/prod-4o?api-version=2024-10-21" {
		t.Errorf("azure identity %+v", a)
	}
	digest := func(j Judge) string { return New([]Judge{j}, nil).Digest }
	if digest(a) == digest(az("prod-4o-mini", "2024-10-21")) || digest(a) == digest(az("prod-4o", "2025-01-01")) {
		t.Error("azure identities do not tell deployments or api-versions apart")
	}
	if j := OfJudge(baseJudge(), SourceAPI, ""); j.API != API {
		t.Errorf("openai API %q", j.API)
	}
	if j := OfJudge(judgeconfig.Config{Provider: judgeconfig.ProviderAnthropic, Model: "claude-sonnet-4-5"}.WithDefaults(), SourceAPI, ""); j.API != "anthropic-messages" {
		t.Errorf("anthropic API %q", j.API)
	}
	br := func(region string) Judge {
		return OfJudge(judgeconfig.Config{Name: "b", Provider: judgeconfig.ProviderBedrock, Model: "amazon.nova-pro-v1:0",
			Region: region, BaseURL: "http://127.0.0.1:9"}.WithDefaults(), SourceAPI, "")
	}
	if j := br("us-east-1"); j.API != "bedrock-converse" || digest(j) == digest(br("eu-west-3")) {
		t.Errorf("bedrock API %q; regions behind one endpoint told apart: %v", j.API, digest(j) != digest(br("eu-west-3")))
	}
	if j := OfJudge(judgeconfig.Config{Provider: judgeconfig.ProviderGemini, Model: "gemini-2.5-flash"}.WithDefaults(), SourceAPI, ""); j.API != "gemini-generate-content" {
		t.Errorf("gemini API %q", j.API)
	}
}

// TestEveryJudgeSettingIsClassified: each field of a judge's
// configuration either changes its identity (it changes a request or the
// weighting of a reply) or provably does not; a new field fails here
// until it is put on one side.
func TestEveryJudgeSettingIsClassified(t *testing.T) {
	t.Parallel()
	temp := 0.0
	changes := map[string]func(*judgeconfig.Config){
		"BaseURL":            func(c *judgeconfig.Config) { c.BaseURL = "http://127.0.0.1:11434/v1" },
		"Model":              func(c *judgeconfig.Config) { c.Model = "other" },
		"Temperature":        func(c *judgeconfig.Config) { c.Temperature = &temp },
		"MaxTokens":          func(c *judgeconfig.Config) { c.MaxTokens = 512 },
		"MaxInputTokens":     func(c *judgeconfig.Config) { c.MaxInputTokens = 1000 },
		"SupportsLogprobs":   func(c *judgeconfig.Config) { c.SupportsLogprobs = true },
		"MaxTopLogprobs":     func(c *judgeconfig.Config) { c.MaxTopLogprobs = 5 },
		"SupportsJSONSchema": func(c *judgeconfig.Config) { c.SupportsJSONSchema = true },
		"JSONSchemaStrict":   func(c *judgeconfig.Config) { c.JSONSchemaStrict = true },
		"SupportsJSONMode":   func(c *judgeconfig.Config) { c.SupportsJSONMode = true },
		"SupportsN":          func(c *judgeconfig.Config) { c.SupportsN = true },
		// gpt-4o-mini's family rule is whole.
		"NumberTokens": func(c *judgeconfig.Config) { c.NumberTokens = judgeconfig.NumbersDigits },
		// A judge's name is the identity's key.
		"Name": func(c *judgeconfig.Config) { c.Name = "other" },
		// Another API answers (APIOf).
		"Provider": func(c *judgeconfig.Config) { c.Provider = judgeconfig.ProviderAnthropic },
		// An Azure judge's deployment and api-version say what answers
		// (TestAzureIdentityNamesDeployment tells them apart).
		"Deployment": func(c *judgeconfig.Config) {
			c.Provider, c.Deployment, c.APIVersion = judgeconfig.ProviderAzure, "d", "2024-10-21"
		},
		"APIVersion": func(c *judgeconfig.Config) {
			c.Provider, c.Deployment, c.APIVersion = judgeconfig.ProviderAzure, "d", "2024-10-21"
		},
		// The embeddings' model decides similarity scores.
		"EmbeddingModel": func(c *judgeconfig.Config) { c.EmbeddingModel = "text-embedding-3-small" },
		// A Bedrock judge's region is where the model runs (the
		// endpoint's ?region=, also behind an endpoint override).
		"Region": func(c *judgeconfig.Config) { c.Provider, c.Region = judgeconfig.ProviderBedrock, "eu-west-3" },
	}
	same := map[string]func(*judgeconfig.Config){
		// Which variable holds the key, not which model answers.
		"APIKeyEnv":     func(c *judgeconfig.Config) { c.APIKeyEnv = "OTHER_KEY" },
		"EntraTokenEnv": func(c *judgeconfig.Config) { c.EntraTokenEnv = "AZURE_TOKEN" },
		// Headers reach a gateway (a team, its key), not the model.
		"Headers": func(c *judgeconfig.Config) { c.Headers = map[string]string{"X-Team": "evals"} },
		// Pacing, retries and prices change when and at what cost a
		// judge answers, not what it answers.
		"Timeout":           func(c *judgeconfig.Config) { c.Timeout *= 2 },
		"MaxConcurrency":    func(c *judgeconfig.Config) { c.MaxConcurrency = 1 },
		"RequestsPerMinute": func(c *judgeconfig.Config) { c.RequestsPerMinute = 60 },
		"TokensPerMinute":   func(c *judgeconfig.Config) { c.TokensPerMinute = 6000 },
		"MaxRetries":        func(c *judgeconfig.Config) { c.MaxRetries = 0 },
		"Price":             func(c *judgeconfig.Config) { c.Price.InputPerMillion = 3 },
		// The batch API carries the same request body and answers the
		// same way, later and at the batch price.
		"Batch": func(c *judgeconfig.Config) { c.Batch = true },
		// The path of a recording; its digest is the identity's when it
		// is replayed (OfJudge's recording).
		"OfflineRecording": func(c *judgeconfig.Config) { c.OfflineRecording = "rec.jsonl" },
	}
	digest := func(c judgeconfig.Config) string {
		return New([]Judge{OfJudge(c, SourceAPI, "")}, nil).Digest
	}
	base := digest(baseJudge())
	typ := reflect.TypeFor[judgeconfig.Config]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		change, inIdentity := changes[name]
		if !inIdentity {
			change = same[name]
		}
		if change == nil {
			t.Errorf("judgeconfig.Config.%s is not classified: does it change a request or the weighting of a reply?", name)
			continue
		}
		c := baseJudge()
		change(&c)
		if changed := digest(c) != base; changed != inIdentity {
			t.Errorf("changing %s: identity changed %v, want %v", name, changed, inIdentity)
		}
	}
}

// TestDiffNamesTheDifference: every difference is named with both sides'
// values, and an identical pair has none.
func TestDiffNamesTheDifference(t *testing.T) {
	t.Parallel()
	kinds := []Kind{{Name: "geval", Version: "1.0.0", Digest: "sha256:aa"}}
	coord := New([]Judge{OfJudge(baseJudge(), SourceAPI, "")}, kinds)
	other := baseJudge()
	other.Model = "other"
	other.BaseURL = "http://127.0.0.1:9/v1"
	worker := New([]Judge{OfJudge(other, SourceAPI, "")}, []Kind{{Name: "geval", Version: "1.0.0", Digest: "sha256:bb"}})
	got := Diff(coord, worker, "coordinator", "worker")
	want := []string{
		"judge default model: coordinator gpt-4o-mini, worker other",
		"judge default base_url: coordinator https://api.openai.com/v1, worker http://127.0.0.1:9/v1",
		// The model decides its family's number rule.
		"judge default number_tokens: coordinator whole, worker digits",
		"built-in kind geval digest: coordinator sha256:aa, worker sha256:bb",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if d := Diff(coord, coord, "a", "b"); d != nil {
		t.Errorf("Diff of a run with itself = %v", d)
	}
	if coord.Digest == worker.Digest {
		t.Error("different identities share a digest")
	}
	extra := New(append(slices.Clone(coord.Judges), Judge{Name: "second", API: API}), kinds)
	if got := Diff(coord, extra, "A", "B"); !slices.Equal(got, []string{"judge second: only B has it"}) {
		t.Errorf("Diff with a judge only in B = %v", got)
	}
}

// TestCaseDigestIsTheQuestion: a case's digest follows what it asks and
// expects, not the answer under test nor the JSON layout of its tools.
func TestCaseDigestIsTheQuestion(t *testing.T) {
	t.Parallel()
	base := func() *abi.TestCase {
		return &abi.TestCase{ID: "c1", Input: "Capital of Australia?", ExpectedOutput: "Canberra", Context: []string{"Australia's capital is Canberra."},
			ActualOutput: "Sydney", ExpectedTools: []abi.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"q": "capital"}`)}}}
	}
	ref := CaseDigest(base())
	for _, tc := range []struct {
		name   string
		change func(*abi.TestCase)
		same   bool
	}{
		{"the answer under test", func(c *abi.TestCase) { c.ActualOutput = "Canberra" }, true},
		{"retrieval and tools called", func(c *abi.TestCase) {
			c.RetrievalContext = []string{"x"}
			c.ToolsCalled = []abi.ToolCall{{Name: "search"}}
		}, true},
		{"the layout of expected tools' JSON", func(c *abi.TestCase) { c.ExpectedTools[0].Arguments = json.RawMessage(`{"q":"capital"}`) }, true},
		{"the input", func(c *abi.TestCase) { c.Input = "Capital of Austria?" }, false},
		{"the expected output", func(c *abi.TestCase) { c.ExpectedOutput = "Vienna" }, false},
		{"the context", func(c *abi.TestCase) { c.Context = append(c.Context, "more") }, false},
		{"context split otherwise", func(c *abi.TestCase) { c.Context = []string{"Australia's capital", " is Canberra."} }, false},
		{"an expected tool", func(c *abi.TestCase) { c.ExpectedTools[0].Name = "lookup" }, false},
		{"the id", func(c *abi.TestCase) { c.ID = "c2" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.change(c)
			if got := CaseDigest(c); (got == ref) != tc.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, ref, got == ref, tc.same)
			}
		})
	}
}

// TestCaseDigestOfAConversation: a conversation's digest follows its
// user and system turns, scenario, outcome and role, not the assistant's
// or tools' turns; a single-turn case's digest is as it was before.
func TestCaseDigestOfAConversation(t *testing.T) {
	if got := CaseDigest(&abi.TestCase{ID: "c1", Input: "Capital of Australia?", ExpectedOutput: "Canberra"}); got != "7bc231d4e235d295" {
		t.Errorf("single-turn digest %s changed", got)
	}
	base := func() *abi.TestCase {
		return &abi.TestCase{ID: "chat", Scenario: "s", ExpectedOutcome: "o", ChatbotRole: "r", Turns: []abi.Turn{
			{Role: abi.RoleSystem, Content: "Be brief."}, {Role: abi.RoleUser, Content: "Capital of Australia?"},
			{Role: abi.RoleAssistant, Content: "Sydney."}, {Role: abi.RoleTool, Content: "{}"},
		}}
	}
	ref := CaseDigest(base())
	if ref == CaseDigest(&abi.TestCase{ID: "chat"}) {
		t.Error("a conversation digests as a case with only its id")
	}
	for _, tc := range []struct {
		name   string
		change func(*abi.TestCase)
		same   bool
	}{
		{"an assistant turn", func(c *abi.TestCase) { c.Turns[2].Content = "Canberra." }, true},
		{"a tool turn", func(c *abi.TestCase) { c.Turns[3].Content = `{"x":1}` }, true},
		{"a user turn", func(c *abi.TestCase) { c.Turns[1].Content = "Capital of Austria?" }, false},
		{"a system turn", func(c *abi.TestCase) { c.Turns[0].Content = "Be long." }, false},
		{"another user turn", func(c *abi.TestCase) { c.Turns = append(c.Turns, abi.Turn{Role: abi.RoleUser, Content: "Sure?"}) }, false},
		{"the scenario", func(c *abi.TestCase) { c.Scenario = "t" }, false},
		{"the expected outcome", func(c *abi.TestCase) { c.ExpectedOutcome = "p" }, false},
		{"the role", func(c *abi.TestCase) { c.ChatbotRole = "q" }, false},
	} {
		c := base()
		tc.change(c)
		if got := CaseDigest(c); (got == ref) != tc.same {
			t.Errorf("%s: digest %s vs %s: same = %v, want %v", tc.name, got, ref, got == ref, tc.same)
		}
	}
}

// TestIdentityHoldsNoPassword: credentials in a base URL stay out of the
// identity, which is written and sent to peers.
func TestIdentityHoldsNoPassword(t *testing.T) {
	t.Parallel()
	c := baseJudge()
	c.BaseURL = "https://user:s3cret@judge.example/v1"
	j := OfJudge(c, SourceAPI, "")
	if strings.Contains(j.BaseURL, "s3cret") || strings.Contains(j.BaseURL, "user") || j.BaseURL != "https://judge.example/v1" {
		t.Errorf("base_url %q", j.BaseURL)
	}
}

// TestIdentityHoldsNoQuery: a gateway's key can travel in the base URL's
// query; the identity names the endpoint without it.
func TestIdentityHoldsNoQuery(t *testing.T) {
	t.Parallel()
	c := baseJudge()
	c.BaseURL = "https://gateway.example/v1?key=s3cret#frag"
	if j := OfJudge(c, SourceAPI, ""); j.BaseURL != "https://gateway.example/v1" {
		t.Errorf("base_url %q, want https://gateway.example/v1", j.BaseURL)
	}
}

// TestCheckCatchesATamperedIdentity: an identity whose digest is not its
// content's is refused.
func TestCheckCatchesATamperedIdentity(t *testing.T) {
	t.Parallel()
	r := New([]Judge{OfJudge(baseJudge(), SourceAPI, "")}, nil)
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	r.Judges[0].Model = "other"
	if err := r.Check(); err == nil {
		t.Error("a changed model under the old digest passed Check")
	}
}

// TestReplayedJudgeIsAnotherAnswerer: a judge replayed from a recording
// is not the judge called over its API, two recordings differ, and one
// recording is one answerer wherever the judge would have been called.
func TestReplayedJudgeIsAnotherAnswerer(t *testing.T) {
	t.Parallel()
	api := New([]Judge{OfJudge(baseJudge(), SourceAPI, "sha256:ignored")}, nil)
	r1 := New([]Judge{OfJudge(baseJudge(), SourceRecording, "sha256:01")}, nil)
	r2 := New([]Judge{OfJudge(baseJudge(), SourceRecording, "sha256:02")}, nil)
	if api.Judges[0].Recording != "" {
		t.Error("a judge called over its API names a recording")
	}
	if api.Digest == r1.Digest || r1.Digest == r2.Digest {
		t.Error("replayed and called judges, or two recordings, share a digest")
	}
	// A replayed judge is not called: where this environment would send
	// it (a worker's OPENAI_BASE_URL) does not change what answers.
	elsewhere := baseJudge()
	elsewhere.BaseURL = "http://127.0.0.1:8080/v1"
	if d := New([]Judge{OfJudge(elsewhere, SourceRecording, "sha256:01")}, nil).Digest; d != r1.Digest {
		t.Error("the base URL of a replayed judge changed its identity")
	}
}

// BenchmarkCaseDigest: the cost each evaluated case pays for its
// case_digest (a quickstart-sized case).
func BenchmarkCaseDigest(b *testing.B) {
	c := &abi.TestCase{ID: "refund-window", Input: "How long do I have to return an item?",
		ActualOutput: "You can return items within 30 days of delivery.", ExpectedOutput: "30 days from delivery.",
		Context: []string{"Returns are accepted within 30 days of delivery for a full refund.", "Digital goods are not refundable."}}
	b.ReportAllocs()
	for b.Loop() {
		_ = CaseDigest(c)
	}
}

// BenchmarkSourceDigest: digesting 120 KB of source, about what the
// G-Eval kind, the SDK and score hold, which a host does once per engine.
func BenchmarkSourceDigest(b *testing.B) {
	src := fstest.MapFS{}
	for i := range 12 {
		src[fmt.Sprintf("f%d.go", i)] = &fstest.MapFile{Data: make([]byte, 10_000)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = SourceDigest(src)
	}
}
