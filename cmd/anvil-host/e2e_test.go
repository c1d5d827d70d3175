package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/host/engine"
	"github.com/agentanvil/anvil/host/judge/judgetest"
)

// The end-to-end tests run the real binary, built from source, against a
// fake judge server speaking the OpenAI wire format.

var (
	binary   string
	wasmDir  string
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anvil-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "anvil-host")
	wasmDir = filepath.Join(dir, "wasm")
	buildErr = buildAll(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildAll(dir string) error {
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("build anvil-host: %v\n%s", err, out)
	}
	if err := os.MkdirAll(wasmDir, 0o755); err != nil {
		return err
	}
	mod := filepath.Join(wasmDir, "textcheck.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", mod, "../../examples/plugins/textcheck/wasm")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build textcheck.wasm: %v\n%s", err, out)
	}
	nat := filepath.Join(wasmDir, "textcheck-native")
	if out, err := exec.Command("go", "build", "-o", nat, "../../examples/plugins/textcheck/native").CombinedOutput(); err != nil {
		return fmt.Errorf("build textcheck-native: %v\n%s", err, out)
	}
	for _, f := range []string{mod, nat} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if err := os.WriteFile(f+".sha256", []byte(hex.EncodeToString(sum[:])+"  "+filepath.Base(f)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// quickstart copies the quickstart example into a temp dir, pointing its
// plugin at the module built for the test.
func quickstart(t *testing.T, metricsOnly ...string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile("../../examples/quickstart/anvil.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(cfg), "../../bin/wasm/", wasmDir+"/")
	cases, err := os.ReadFile("../../examples/quickstart/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"anvil.yaml": []byte(text), "cases.jsonl": cases} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// geval scripts the judge: steps, then scores. "Sydney" and "cannot
// cancel" answers score 2, everything else 8 with logprobs (weighted 7.9).
func geval(s *judgetest.Server) {
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{
		Content: `{"steps": ["Identify the key fact.", "Compare with the expected output.", "Penalise contradictions."]}`,
	})
	low := judgetest.JSONScoreReply("Wrong or evasive.", "2", map[string]float64{"2": .9, "3": .1})
	s.On(judgetest.ContainsMessage("Sydney"), low)
	s.On(judgetest.ContainsMessage("You cannot cancel"), low)
	s.SetDefault(judgetest.JSONScoreReply("Correct and direct.", "8", map[string]float64{"8": .7, "7": .2, "9": .1}))
}

type result struct {
	code   int
	stdout string
	stderr string
}

func runBinary(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(dir), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// baseEnv keeps PATH and HOME but never a real judge key or URL.
func baseEnv(dir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ANVIL_COMPILE_CACHE=" + filepath.Join(os.TempDir(), "anvil-e2e-wazero")}
}

func judgeEnv(s *judgetest.Server) []string {
	return []string{"OPENAI_BASE_URL=" + s.URL(), "OPENAI_API_KEY=e2e-key"}
}

func readSummary(t *testing.T, path string) engine.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s engine.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func metricOf(t *testing.T, s engine.Summary, name string) engine.MetricSummary {
	t.Helper()
	for _, m := range s.Metrics {
		if m.Metric == name {
			return m
		}
	}
	t.Fatalf("no metric %s in summary", name)
	return engine.MetricSummary{}
}

func resultLines(t *testing.T, path string) []engine.CaseResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []engine.CaseResult
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r engine.CaseResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	return out
}

func TestQuickstartEndToEnd(t *testing.T) {
	dir := quickstart(t)
	srv := judgetest.New(t)
	geval(srv)

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	// correctness fails on two cases (scored 0.21 < 0.6): exit 1.
	if r.code != exitThreshold {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// 12 cases: correctness = 1 steps + 12 scores; helpfulness (steps given) = 12.
	if got := srv.Calls(); got != 25 {
		t.Fatalf("cold run: %d judge calls, want 25", got)
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	c := metricOf(t, s, "correctness")
	if c.N != 12 || c.Scored != 12 || c.Failed != 2 || c.Passed != 10 || c.ScoreModes["weighted"] != 12 {
		t.Fatalf("correctness = %+v", c)
	}
	// mean of ten 0.79 and two 0.21 = 0.6933
	if *c.Mean != 0.6933 {
		t.Fatalf("correctness mean = %v, want 0.6933", *c.Mean)
	}
	if ex := metricOf(t, s, "exact"); ex.Passed != 1 || ex.Failed != 11 || ex.Gated {
		t.Fatalf("exact = %+v, want 1 pass (sqrt-144), informational", ex)
	}
	if s.Passed {
		t.Fatal("summary passed, want failed")
	}
	for _, want := range []string{"correctness", "helpfulness", "exact", "FAILED", "weighted:12"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary table lacks %q:\n%s", want, r.stdout)
		}
	}
	lines := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(lines) != 12 {
		t.Fatalf("results.jsonl has %d lines, want 12", len(lines))
	}
	caseFiles, _ := filepath.Glob(filepath.Join(dir, "out", "cases", "*.json"))
	if len(caseFiles) != 12 {
		t.Fatalf("%d case files, want 12", len(caseFiles))
	}
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	jb, err := os.ReadFile(filepath.Join(dir, "out", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(jb, &junit); err != nil {
		t.Fatal(err)
	}
	// 36 = 12 cases × 3 metrics; failures: correctness 2 + helpfulness 2 (exact is not gated).
	if junit.Tests != 36 || junit.Failures != 4 {
		t.Fatalf("junit tests=%d failures=%d, want 36 and 4", junit.Tests, junit.Failures)
	}

	// Rerun: everything from the cache, the same summary.
	before := srv.Calls()
	r2 := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out2", "--no-progress")
	if r2.code != exitThreshold || srv.Calls() != before {
		t.Fatalf("rerun: exit %d, %d new calls; want 1 and 0", r2.code, srv.Calls()-before)
	}
	s2 := readSummary(t, filepath.Join(dir, "out2", "summary.json"))
	if *metricOf(t, s2, "correctness").Mean != *c.Mean {
		t.Fatal("rerun summary differs")
	}
}

func TestCriteriaOnlyGEvalCallsNPlusOneThenN(t *testing.T) {
	dir := quickstart(t)
	cfg := `version: 1
dataset: cases.jsonl
judges:
  default: {supports_logprobs: true, supports_json_schema: true}
metrics:
  - name: correctness
    kind: geval
    params:
      criteria: Is the actual output correct?
      evaluation_params: [input, actual_output]
`
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := judgetest.New(t)
	geval(srv)
	runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "a", "--limit", "6", "--no-progress")
	if got := srv.Calls(); got != 7 {
		t.Fatalf("cold: %d calls over 6 cases, want 7 (N+1)", got)
	}
	// The next 6 cases: the steps come from the cache, one call per case.
	lines := strings.SplitAfter(string(mustRead(t, filepath.Join(dir, "cases.jsonl"))), "\n")
	if err := os.WriteFile(filepath.Join(dir, "rest.jsonl"), []byte(strings.Join(lines[6:], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--input", "rest.jsonl", "-o", "b", "--no-progress")
	if got := srv.Calls() - 7; got != 6 {
		t.Fatalf("rerun: %d calls over 6 new cases, want 6 (N: steps cached)", got)
	}
	s := readSummary(t, filepath.Join(dir, "b", "summary.json"))
	var prep struct {
		StepsSource string `json:"steps_source"`
	}
	json.Unmarshal(s.Prepare[0].Details, &prep)
	if prep.StepsSource != "cache" {
		t.Fatalf("prepare details = %s, want steps from the cache", s.Prepare[0].Details)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExitCodes(t *testing.T) {
	dir := quickstart(t)
	srv := judgetest.New(t)
	geval(srv)
	// No judge key: LLM metrics skipped with a message, the Wasm metric runs, exit 0.
	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "nokey", "--no-progress")
	if r.code != exitOK || !strings.Contains(r.stdout, "OPENAI_API_KEY") || !strings.Contains(r.stdout, "exact") {
		t.Fatalf("no key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// estimate works without a key and calls nothing.
	r = runBinary(t, dir, nil, "estimate", "-c", "anvil.yaml", "--json")
	var est engine.EstimateReport
	if err := json.Unmarshal([]byte(r.stdout), &est); err != nil || r.code != 0 {
		t.Fatalf("estimate: exit %d %v\n%s", r.code, err, r.stderr)
	}
	if est.Total.JudgeCalls != 25 || est.Total.USD <= 0 {
		t.Fatalf("estimate total = %+v, want 25 calls and a price", est.Total)
	}
	// Config errors: exit 2 with file:line.
	bad := strings.Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))), "threshold: 0.6", "threshold: 0.6\n    treshold: 1", 1)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)
	r = runBinary(t, dir, nil, "run", "-c", "bad.yaml")
	if r.code != exitUsage || !strings.Contains(r.stderr, "bad.yaml:") || !strings.Contains(r.stderr, "treshold") {
		t.Fatalf("bad config: exit %d, stderr %q", r.code, r.stderr)
	}
	// validate reads the whole dataset up front and names a bad record.
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"id\": \"a\", \"input\": \"q\"}\n{\"id\": \"b\", \"input\": 3}\n"), 0o644)
	r = runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--input", "bad.jsonl")
	if r.code != exitUsage || !strings.Contains(r.stderr, "bad.jsonl:2:") || !strings.Contains(r.stderr, `field "input"`) {
		t.Fatalf("validate bad dataset: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runBinary(t, dir, nil, "validate", "-c", "anvil.yaml")
	if r.code != exitOK || !strings.Contains(r.stdout, "12 case(s) parse") {
		t.Fatalf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Every gated metric passing: exit 0.
	lenient := strings.NewReplacer("threshold: 0.6", "threshold: 0.1", "threshold: 0.5", "threshold: 0.1").Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))))
	os.WriteFile(filepath.Join(dir, "lenient.yaml"), []byte(lenient), 0o644)
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "lenient.yaml", "-o", "lenient", "--no-progress")
	if r.code != exitOK {
		t.Fatalf("lenient: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestKillAndResume kills the process in the middle of a run, reruns with
// --resume, and requires the same summary as an uninterrupted run with no
// case lost or written twice.
func TestKillAndResume(t *testing.T) {
	dir := quickstart(t)
	reference := judgetest.New(t)
	geval(reference)
	runBinary(t, dir, judgeEnv(reference), "run", "-c", "anvil.yaml", "-o", "ref", "--cache", "off", "--no-progress")
	want := readSummary(t, filepath.Join(dir, "ref", "summary.json"))

	// The judge answers 12 scoring calls, then hangs every call, and says
	// when the hang began: the process is then mid-run, with some cases
	// written and others in flight.
	srv := judgetest.New(t)
	geval(srv)
	var scored atomic.Int64
	hung := make(chan struct{})
	var once sync.Once
	good := judgetest.JSONScoreReply("Correct and direct.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
	srv.SetDefault(judgetest.ReplyFunc(func(req judgetest.RecordedRequest) judgetest.Reply {
		if scored.Add(1) > 12 {
			once.Do(func() { close(hung) })
			return judgetest.Reply{Hang: true}
		}
		return good
	}))

	cmd := exec.Command(binary, "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--concurrency", "2", "--no-progress")
	cmd.Dir = dir
	cmd.Env = append(baseEnv(dir), judgeEnv(srv)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-hung
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	partial := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(partial) == 0 || len(partial) >= 12 {
		t.Fatalf("after the kill results.jsonl has %d cases, want some but not all", len(partial))
	}

	srv2 := judgetest.New(t)
	geval(srv2)
	r := runBinary(t, dir, judgeEnv(srv2), "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--resume", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	lines := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.CaseID] {
			t.Fatalf("case %s written twice", l.CaseID)
		}
		seen[l.CaseID] = true
	}
	if len(lines) != 12 {
		t.Fatalf("after resume results.jsonl has %d cases, want 12", len(lines))
	}
	got := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	for _, name := range []string{"correctness", "helpfulness", "exact"} {
		g, w := metricOf(t, got, name), metricOf(t, want, name)
		if g.N != w.N || g.Passed != w.Passed || g.Failed != w.Failed || *g.Mean != *w.Mean {
			t.Errorf("%s after resume = n %d pass %d fail %d mean %v; uninterrupted = n %d pass %d fail %d mean %v",
				name, g.N, g.Passed, g.Failed, *g.Mean, w.N, w.Passed, w.Failed, *w.Mean)
		}
	}
	// Only the cases not written before the kill were judged again.
	if calls := srv2.Calls(); calls >= 25 {
		t.Fatalf("resume made %d calls; it should skip the %d finished cases", calls, len(partial))
	}
}

func copyExample(t *testing.T, name string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for _, f := range []string{"anvil.yaml", "cases.jsonl"} {
		b := mustRead(t, filepath.Join("../../examples", name, f))
		b = []byte(strings.ReplaceAll(string(b), "../../bin/wasm/", wasmDir+"/"))
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDAGExample runs examples/dag: a Wasm regex gate, a binary question,
// and a G-Eval child metric on the "true" verdict.
func TestDAGExample(t *testing.T) {
	dir := copyExample(t, "dag")
	srv := judgetest.New(t)
	binary := judgetest.ContainsMessage("Decide whether the criterion")
	srv.On(judgetest.All(binary, judgetest.ContainsMessage("TKT-20931")), judgetest.Reply{Content: `{"reason": "No next step.", "verdict": false}`})
	srv.On(binary, judgetest.Reply{Content: `{"reason": "Concrete next step given.", "verdict": true}`})
	srv.On(judgetest.ContainsMessage("read your emails"), judgetest.JSONScoreReply("Blaming.", "2", map[string]float64{"2": .9, "3": .1}))
	srv.SetDefault(judgetest.JSONScoreReply("Warm and specific.", "9", map[string]float64{"9": .8, "8": .2}))

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// refund-ok: binary + tone = 2; no-ticket: gate only = 0; unresolved:
	// binary = 1; rude: binary + tone = 2. The losing branches cost nothing.
	if got := srv.Calls(); got != 5 {
		t.Fatalf("%d judge calls, want 5", got)
	}
	type dagDetails struct {
		Score float64  `json:"score"`
		Path  []string `json:"path"`
		Nodes []struct {
			ID         string `json:"id"`
			Verdict    string `json:"verdict"`
			JudgeCalls int    `json:"judge_calls"`
		} `json:"nodes"`
		Metrics []struct {
			Metric string `json:"metric"`
		} `json:"metrics"`
	}
	want := map[string]struct {
		score float64
		path  string
		calls int
	}{
		"refund-ok":  {0.88, "has_ticket,resolves", 2},
		"no-ticket":  {0, "has_ticket", 0},
		"unresolved": {0.3, "has_ticket,resolves", 1},
		"rude":       {0.21, "has_ticket,resolves", 2},
	}
	lines := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(lines) != 4 {
		t.Fatalf("%d results, want 4", len(lines))
	}
	for _, l := range lines {
		if len(l.Metrics) != 1 {
			t.Fatalf("case %s has %d metrics, want only the dag (tone is a DAG child)", l.CaseID, len(l.Metrics))
		}
		mr := l.Metrics[0]
		var d dagDetails
		if err := json.Unmarshal(mr.Details, &d); err != nil {
			t.Fatal(err)
		}
		w := want[l.CaseID]
		if mr.Score == nil || fmt.Sprintf("%.4f", *mr.Score) != fmt.Sprintf("%.4f", w.score) {
			t.Errorf("%s: score %v, want %v (%s)", l.CaseID, mr.Score, w.score, mr.Reason)
		}
		if got := strings.Join(d.Path, ","); got != w.path {
			t.Errorf("%s: path %s, want %s", l.CaseID, got, w.path)
		}
		if mr.Usage.Calls != w.calls {
			t.Errorf("%s: %d judge calls, want %d", l.CaseID, mr.Usage.Calls, w.calls)
		}
	}

	// Render the path one case took.
	r = runBinary(t, dir, nil, "dag", "render", "-c", "anvil.yaml", "support_quality", "--results", "out/results.jsonl", "--case", "unresolved")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "flowchart") || !strings.Contains(r.stdout, "taken") {
		t.Fatalf("render: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestProcessTransportGivesTheSameResultsAsWasm runs the quickstart's
// deterministic metric from the native textcheck binary (transport:
// process) and from the Wasm module, and requires identical results.
func TestProcessTransportGivesTheSameResultsAsWasm(t *testing.T) {
	dir := quickstart(t)
	cfg := string(mustRead(t, filepath.Join(dir, "anvil.yaml")))
	native := strings.NewReplacer(
		wasmDir+"/textcheck.wasm.sha256", wasmDir+"/textcheck-native.sha256",
		wasmDir+"/textcheck.wasm", wasmDir+"/textcheck-native",
		"grants: {judge: false}", "grants: {judge: false}\n    transport: process",
	).Replace(cfg)
	if !strings.Contains(native, "transport: process") || !strings.Contains(native, "textcheck-native.sha256") {
		t.Fatalf("native config not rewritten:\n%s", native)
	}
	if err := os.WriteFile(filepath.Join(dir, "native.yaml"), []byte(native), 0o644); err != nil {
		t.Fatal(err)
	}
	a := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "wasm", "--no-progress")
	b := runBinary(t, dir, nil, "run", "-c", "native.yaml", "-o", "native", "--no-progress")
	if a.code != 0 || b.code != 0 {
		t.Fatalf("exit %d / %d\n%s\n%s", a.code, b.code, a.stderr, b.stderr)
	}
	scores := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range resultLines(t, filepath.Join(dir, out, "results.jsonl")) {
			for _, r := range l.Metrics {
				if r.Metric == "exact" {
					m[l.CaseID] = fmt.Sprintf("%s %v %s", r.Status, *r.Score, r.Reason)
				}
			}
		}
		return m
	}
	wa, na := scores("wasm"), scores("native")
	if len(wa) != 12 || fmt.Sprint(wa) != fmt.Sprint(na) {
		t.Fatalf("wasm and process results differ:\nwasm   %v\nnative %v", wa, na)
	}
}
