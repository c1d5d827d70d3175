package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/internal/godeps"
)

// envJudgeConfig names no model and no base URL: both come from the
// environment (ANVIL_JUDGE_MODEL, OPENAI_BASE_URL), as `anvil-host init`
// writes it.
const envJudgeConfig = `version: 1
dataset: cases.jsonl
judges:
  default:
    api_key_env: ANVIL_TEST_KEY
    supports_logprobs: true
    supports_json_schema: true
defaults:
  judge: default
metrics:
` + correctness

// openEnvEngine loads e's config with model and base URL from the given
// environment.
func openEnvEngine(t *testing.T, e env, model, baseURL string) *engine.Engine {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"ANVIL_TEST_KEY": "test-key", "ANVIL_JUDGE_MODEL": model, "OPENAI_BASE_URL": baseURL}
	eng, err := engine.New(context.Background(), cfg, engine.Options{Cache: "off", StorePath: e.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}

// TestResumeUnderAnotherJudgeModelIsRefused: a run whose judge model
// comes from the environment, resumed with another ANVIL_JUDGE_MODEL
// (same config file, same config hash), is refused naming the model
// instead of mixing two judges' scores in one summary.
func TestResumeUnderAnotherJudgeModelIsRefused(t *testing.T) {
	judge := fakeJudge(t)
	e := newEnv(t, envJudgeConfig)
	first := openEnvEngine(t, e, "fake-model", judge.URL())
	if _, err := first.Run(context.Background(), engine.RunOptions{OutputDir: e.out, Limit: 2}); err != nil {
		t.Fatal(err)
	}
	other := openEnvEngine(t, e, "gpt-4o-mini", judge.URL())
	if other.ConfigHash() != first.ConfigHash() {
		t.Fatalf("config hashes %s and %s: this test needs the model to come from the environment only", first.ConfigHash(), other.ConfigHash())
	}
	_, err := other.Run(context.Background(), engine.RunOptions{OutputDir: e.out, Resume: true})
	if err == nil {
		t.Fatal("resume under another judge model was accepted")
	}
	if want := "judge default model: results fake-model, this run gpt-4o-mini"; !strings.Contains(err.Error(), want) {
		t.Errorf("resume error:\n%v\nwant it to name %q", err, want)
	}
	if n := len(readResults(t, e.out)); n != 2 {
		t.Errorf("results.jsonl has %d cases after the refused resume, want the first run's 2", n)
	}
	// The same environment resumes.
	again := openEnvEngine(t, e, "fake-model", judge.URL())
	s, err := again.Run(context.Background(), engine.RunOptions{OutputDir: e.out, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Resume == nil || s.Resume.Done != 2 || s.Cases != 4 {
		t.Errorf("resume report %+v, %d cases; want 2 done, 4 in all", s.Resume, s.Cases)
	}
}

// TestSummaryNamesTheResolvedJudge: summary.json records the judge as it
// was called — model and base URL from the environment, the number rule
// resolved — and the built-in kinds by source digest; every results line
// carries the identity's digest and its case's.
func TestSummaryNamesTheResolvedJudge(t *testing.T) {
	judge := fakeJudge(t)
	e := newEnv(t, envJudgeConfig)
	eng := openEnvEngine(t, e, "fake-model", judge.URL())
	if _, err := eng.Run(context.Background(), engine.RunOptions{OutputDir: e.out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(e.out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Identity *identity.Run `json:"identity"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Identity == nil {
		t.Fatalf("summary.json has no identity (%v):\n%s", err, b)
	}
	id := s.Identity
	if len(id.Judges) != 1 {
		t.Fatalf("judges %+v, want the one configured", id.Judges)
	}
	j := id.Judges[0]
	if j.Name != "default" || j.Model != "fake-model" || j.BaseURL != strings.TrimRight(judge.URL(), "/") ||
		j.Source != identity.SourceAPI || !j.SupportsLogprobs || j.NumberTokens == "" || j.NumberTokens == "auto" {
		t.Errorf("judge identity %+v", j)
	}
	names := map[string]bool{}
	for _, k := range id.Kinds {
		names[k.Name] = true
		if !strings.HasPrefix(k.Digest, "sha256:") || k.Version == "" {
			t.Errorf("built-in kind %+v", k)
		}
	}
	if !names["geval"] {
		t.Errorf("built-in kinds %+v lack geval", id.Kinds)
	}
	if err := id.Check(); err != nil || id.Digest != eng.Identity().Digest {
		t.Errorf("identity digest %s (%v), the engine's %s", id.Digest, err, eng.Identity().Digest)
	}
	for caseID, r := range readResults(t, e.out) {
		c, err := results.ReadCase(e.out, caseID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Identity != id.Digest || r.Worker != "" || r.CaseDigest != identity.CaseDigest(c.Case) {
			t.Errorf("case %s: identity %q, case digest %q, worker %q; want %s, its case's and none (a local run)", caseID, r.Identity, r.CaseDigest, r.Worker, id.Digest)
		}
	}
}

// TestCheckResultRefusesAnotherIdentity: a result computed elsewhere with
// another judge (or without an identity) is not written with this run's.
func TestCheckResultRefusesAnotherIdentity(t *testing.T) {
	judge := fakeJudge(t)
	e := newEnv(t, envJudgeConfig)
	here := openEnvEngine(t, e, "fake-model", judge.URL())
	there := openEnvEngine(t, e, "other", judge.URL())
	c := mustCase()
	r := there.Evaluate(context.Background(), c)
	if err := here.CheckResult(r); err == nil || !strings.Contains(err.Error(), "identity") {
		t.Errorf("a result of judge model other: CheckResult = %v", err)
	}
	r.Identity = ""
	if err := here.CheckResult(r); err == nil {
		t.Error("a result without an identity passed CheckResult")
	}
	r = here.Evaluate(context.Background(), c)
	r.CaseDigest = identity.CaseDigest(&abi.TestCase{ID: c.ID, Input: "another question"})
	if err := here.CheckResult(r); err == nil || !strings.Contains(err.Error(), "case digest") {
		t.Errorf("a result whose case digest is another case's: CheckResult = %v", err)
	}
	if err := here.CheckResult(here.Evaluate(context.Background(), c)); err != nil {
		t.Errorf("this engine's own result: %v", err)
	}
}

// TestDeterministicRunHasNoJudgeIdentity: a run no metric of which may
// call a judge does not depend on which judge the environment names.
func TestDeterministicRunHasNoJudgeIdentity(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	open := func(model string) *engine.Engine {
		cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		opts := engine.Options{Cache: "off", StorePath: e.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Getenv: func(k string) string { return map[string]string{"ANVIL_JUDGE_MODEL": model}[k] }}
		engine.WithInprocPlugins(&opts, liar())
		eng, err := engine.New(context.Background(), cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close(context.Background()) })
		return eng
	}
	a, b := open("m1"), open("m2")
	if len(a.Identity().Judges) != 0 || a.Identity().Digest != b.Identity().Digest {
		t.Errorf("identities %+v and %+v; want no judge in either, one digest", a.Identity(), b.Identity())
	}
}

// TestBuiltinDigestsCoverTheKindsCode: a built-in kind's source digest
// covers every package of this module it links that decides what it does
// (its own, the SDK's, score's); the rest are plumbing whose changes
// cannot change a score unnoticed. A new dependency fails here until it
// is put on one side.
func TestBuiltinDigestsCoverTheKindsCode(t *testing.T) {
	const module = "github.com/agentanvil/anvil/"
	digested := map[string][]string{
		"geval":        {"plugins/geval", "sdk", "score"},
		"dag":          {"plugins/dag", "sdk"},
		"rag":          {"plugins/rag", "plugins/judged", "sdk"},
		"assert":       {"plugins/assert", "plugins/textmatch", "sdk"},
		"conversation": {"plugins/conversation", "sdk"},
		"content":      {"plugins/content", "plugins/judged", "sdk"},
		"agent":        {"plugins/agent", "plugins/judged", "sdk"},
		"similarity":   {"plugins/similarity", "sdk"},
	}
	plumbing := map[string]string{
		"abi":                 "the ABI's types and names: a change is a new ABI version, which peers compare",
		"internal/jsonw":      "JSON writing, held byte for byte to encoding/json by its fuzz tests",
		"sdk/internal/schema": "the JSON Schema of a kind's config: what it accepts, checked before a run, not how it scores",
	}
	kinds := engine.BuiltinKinds()
	if len(kinds) != len(digested) {
		t.Fatalf("built-in kinds %+v; this test knows %d", kinds, len(digested))
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		pkgs, ok := digested[k.Name]
		if !ok {
			t.Errorf("built-in kind %s: which packages does its digest cover?", k.Name)
			continue
		}
		if seen[k.Digest] {
			t.Errorf("built-in kind %s shares its digest %s", k.Name, k.Digest)
		}
		seen[k.Digest] = true
		for _, d := range godeps.List(t, nil, module+pkgs[0]) {
			rel, ours := strings.CutPrefix(d.Path, module)
			if d.Std || !ours {
				continue
			}
			if _, ok := plumbing[rel]; !ok && !slices.Contains(pkgs, rel) {
				t.Errorf("built-in kind %s links %s, which its source digest does not cover", k.Name, rel)
			}
		}
	}
	if again := engine.BuiltinKinds(); !slices.Equal(again, kinds) {
		t.Errorf("BuiltinKinds changed between calls: %+v, %+v", kinds, again)
	}
}
