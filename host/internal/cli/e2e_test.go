package cli

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
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
	if out, err := exec.Command("go", "build", "-o", binary, "../../../cmd/anvil-host").CombinedOutput(); err != nil {
		return fmt.Errorf("build anvil-host: %v\n%s", err, out)
	}
	if err := os.MkdirAll(wasmDir, 0o755); err != nil {
		return err
	}
	mod := filepath.Join(wasmDir, "textcheck.wasm")
	// As scripts/build-plugins builds it: the digest the tests pin is the
	// one users get.
	if _, err := testkit.BuildGuest(context.Background(), "../../../examples/plugins/textcheck/wasm", mod); err != nil {
		return err
	}
	nat := filepath.Join(wasmDir, "textcheck-native")
	if out, err := exec.Command("go", "build", "-o", nat, "../../../examples/plugins/textcheck/native").CombinedOutput(); err != nil {
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
	for _, name := range []string{"anvil.yaml", "cases.jsonl", "cases-regressed.jsonl", "judge-session.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../../examples/quickstart", name))
		if os.IsNotExist(err) && name == "judge-session.jsonl" && *updateRecording {
			continue // about to be recorded
		}
		if err != nil {
			t.Fatal(err)
		}
		if name == "anvil.yaml" {
			b = []byte(strings.ReplaceAll(string(b), "../../bin/wasm/", wasmDir+"/"))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// badAnswers are the quickstart's wrong or evasive answers
// (cases-regressed.jsonl).
var badAnswers = []string{"Sydney is the capital", "every purchase can be refunded", "shipping is a complex topic",
	"Saturn is the largest", "You cannot cancel"}

// geval scripts the judge: steps, then scores. The bad answers score 2
// (alternatives 2:.9, 3:.1, weighted 2.1), everything else 8 (8:.7, 7:.2,
// 9:.1, weighted 7.9). It is also the script the quickstart's recorded
// session was made with (TestQuickstartRecording).
func geval(s *judgetest.Server) {
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{
		Content: `{"steps": ["Identify the key fact.", "Compare with the expected output.", "Penalise contradictions."]}`,
	})
	low := judgetest.JSONScoreReply("Wrong or evasive.", "2", map[string]float64{"2": .9, "3": .1})
	for _, bad := range badAnswers {
		s.On(judgetest.ContainsMessage(bad), low)
	}
	s.SetDefault(gevalGood())
}

// gevalGood is geval's reply to a good answer.
func gevalGood() judgetest.Reply {
	return judgetest.JSONScoreReply("Correct and direct.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
}

// hangingGEval is a judge scripted by geval whose first n scoring calls
// score 8 and every later one hangs; hung closes when the first hangs.
func hangingGEval(t *testing.T, n int64) (srv *judgetest.Server, hung <-chan struct{}) {
	srv = judgetest.New(t)
	geval(srv)
	var scored atomic.Int64
	h := make(chan struct{})
	var once sync.Once
	srv.SetDefault(judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		if scored.Add(1) > n {
			once.Do(func() { close(h) })
			return judgetest.Reply{Hang: true}
		}
		return gevalGood()
	}))
	return srv, h
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
	return runCmd(t, cmd)
}

// runCmd runs cmd: its exit code is in the result, only a failure to
// start or wait for it fails t.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
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

func readSummary(t *testing.T, path string) results.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func metricOf(t *testing.T, s results.Summary, name string) results.MetricSummary {
	t.Helper()
	for _, m := range s.Metrics {
		if m.Metric == name {
			return m
		}
	}
	t.Fatalf("no metric %s in summary", name)
	return results.MetricSummary{}
}

// resultLines reads results.jsonl at path, in file order.
func resultLines(t *testing.T, path string) []results.CaseResult { return enginetest.Results(t, path) }

func TestQuickstartEndToEnd(t *testing.T) {
	dir := quickstart(t)
	srv := judgetest.New(t)
	geval(srv)

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	// Good answers: every gated metric passes.
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// 12 cases: correctness = 1 steps + 12 scores; helpfulness (steps given) = 12.
	if got := srv.Calls(); got != 25 {
		t.Fatalf("cold run: %d judge calls, want 25", got)
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	c := metricOf(t, s, "correctness")
	if c.N != 12 || c.Scored != 12 || c.Failed != 0 || c.Passed != 12 || c.ScoreModes["weighted"] != 12 || *c.Mean != 0.79 {
		t.Fatalf("correctness = %+v", c)
	}
	if ex := metricOf(t, s, "exact"); ex.Passed != 1 || ex.Failed != 11 || ex.Gated {
		t.Fatalf("exact = %+v, want 1 pass (sqrt-144), informational", ex)
	}
	if !s.Passed || s.Verdict != "passed" || s.Judges[0].Source != "api" {
		t.Fatalf("summary verdict %s, judges %+v", s.Verdict, s.Judges)
	}
	// What the table, summary.json and the server agree on: 25 upstream calls.
	if s.Judge.Calls != 25 || s.Judge.Attempts != 25 || s.Judge.Requests != 25 {
		t.Fatalf("summary judge usage = %+v, want 25 requests, calls and attempts", s.Judge)
	}
	for _, want := range []string{"correctness", "helpfulness", "exact", "PASSED", "weighted:12", "25 judge calls"} {
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

	// The regressed answers, into the same output directory: the gate
	// catches them, and nothing of the first run is left beside them.
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--input", "cases-regressed.jsonl", "-o", "out", "--no-progress")
	if r.code != exitThreshold || !strings.Contains(r.stdout, "FAILED") {
		t.Fatalf("regressed: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s = readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if c := metricOf(t, s, "correctness"); c.N != 5 || c.Failed != 5 || *c.Mean != 0.21 {
		t.Fatalf("regressed correctness = %+v", c)
	}
	caseFiles, _ = filepath.Glob(filepath.Join(dir, "out", "cases", "*.json"))
	if len(caseFiles) != 5 {
		t.Fatalf("%d case files after the second run, want its 5", len(caseFiles))
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
	// 15 = 5 cases × 3 metrics; failures: correctness 5 + helpfulness 5 (exact is not gated).
	if junit.Tests != 15 || junit.Failures != 10 {
		t.Fatalf("junit tests=%d failures=%d, want 15 and 10", junit.Tests, junit.Failures)
	}

	// Rerun: everything from the cache, the same summary.
	before := srv.Calls()
	r2 := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out2", "--no-progress")
	if r2.code != exitOK || srv.Calls() != before {
		t.Fatalf("rerun: exit %d, %d new calls; want 0 and 0", r2.code, srv.Calls()-before)
	}
	s2 := readSummary(t, filepath.Join(dir, "out2", "summary.json"))
	if *metricOf(t, s2, "correctness").Mean != 0.79 || s2.Judge.Calls != 0 || s2.Judge.CacheHits != 25 {
		t.Fatalf("rerun summary differs: %+v", s2.Judge)
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
	// No judge key and no recording: the gated LLM metrics verified
	// nothing — exit 3, with a message saying how to configure the judge.
	noRec := strings.Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))), "offline_recording: judge-session.jsonl", "", 1)
	os.WriteFile(filepath.Join(dir, "norec.yaml"), []byte(noRec), 0o644)
	r := runBinary(t, dir, nil, "run", "-c", "norec.yaml", "-o", "nokey", "--no-progress")
	if r.code != exitUnverified || !strings.Contains(r.stdout, "OPENAI_API_KEY") || !strings.Contains(r.stdout, "UNVERIFIED") ||
		!strings.Contains(r.stderr, "could not verify") {
		t.Fatalf("no key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// An empty dataset verifies nothing: exit 3.
	os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644)
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--input", "empty.jsonl", "-o", "empty", "--no-progress")
	if r.code != exitUnverified || !strings.Contains(r.stdout, "no cases") {
		t.Fatalf("empty dataset: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A duplicate id is found before the first judge call: exit 2.
	before := srv.Calls()
	dup := string(mustRead(t, filepath.Join(dir, "cases.jsonl"))) + `{"id": "capital-fr", "input": "again?", "actual_output": "Paris", "expected_output": "Paris"}` + "\n"
	os.WriteFile(filepath.Join(dir, "dup.jsonl"), []byte(dup), 0o644)
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--input", "dup.jsonl", "-o", "dup", "--no-progress")
	if r.code != exitUsage || !strings.Contains(r.stderr, "dup.jsonl:13") || srv.Calls() != before {
		t.Fatalf("duplicate id: exit %d, %d judge calls\n%s", r.code, srv.Calls()-before, r.stderr)
	}
	// --limit 0 and negative --concurrency are mistakes, not defaults.
	for _, args := range [][]string{{"--limit", "0"}, {"--concurrency", "-1"}} {
		r = runBinary(t, dir, nil, append([]string{"run", "-c", "anvil.yaml", "-o", "flags"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, args[0]) {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	// A judge that refuses the key fails the run fast with exit 3.
	down := judgetest.New(t, judgetest.WithAPIKey("the-right-key"))
	r = runBinary(t, dir, []string{"OPENAI_BASE_URL=" + down.URL(), "OPENAI_API_KEY=a-wrong-key"}, "run", "-c", "anvil.yaml", "-o", "down", "--no-progress")
	// At most the calls already in flight when the breaker opened (the
	// judge's max_concurrency, 8) get through; one WARN, not one per case.
	if r.code != exitUnverified || down.Calls() > 8+3 || strings.Count(r.stderr, "level=WARN") != 1 ||
		!strings.Contains(r.stdout, "resume with:") {
		t.Fatalf("judge refusing the key: exit %d after %d calls\n%s\n%s", r.code, down.Calls(), r.stdout, r.stderr)
	}
	// estimate works without a key and calls nothing; the recording makes
	// every request free.
	r = runBinary(t, dir, nil, "estimate", "-c", "anvil.yaml", "--json")
	var est engine.EstimateReport
	if err := json.Unmarshal([]byte(r.stdout), &est); err != nil || r.code != 0 {
		t.Fatalf("estimate: exit %d %v\n%s", r.code, err, r.stderr)
	}
	if est.Total.JudgeCalls+est.Total.CachedCalls != 25 {
		t.Fatalf("estimate total = %+v, want 25 calls counted", est.Total)
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
	srv, hung := hangingGEval(t, 12)

	// Results are committed in 10 ms batches: the kill waits for the
	// run's own word (a debug log line) that a batch is on disk.
	cmd := exec.Command(binary, "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--concurrency", "2", "--no-progress", "--log-level", "debug")
	cmd.Dir = dir
	cmd.Env = append(baseEnv(dir), judgeEnv(srv)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	committed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), `msg="results committed"`) {
				close(committed)
				signalled = true
			}
		}
	}()
	<-hung
	<-committed
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	partial := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(partial) == 0 || len(partial) >= 12 {
		t.Fatalf("after the kill results.jsonl has %d cases, want some but not all", len(partial))
	}

	// The judge is at another base URL now (OPENAI_BASE_URL): another
	// endpoint may serve another model under the same name, so the
	// results of the two are not mixed.
	elsewhere := judgetest.New(t)
	geval(elsewhere)
	r := runBinary(t, dir, judgeEnv(elsewhere), "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--resume", "--no-progress")
	if r.code != exitUsage || !strings.Contains(r.stderr, "written by judges and kinds of identity") || !strings.Contains(r.stderr, elsewhere.URL()) {
		t.Fatalf("resume against another judge URL: exit %d, want %d naming this run's judge\n%s", r.code, exitUsage, r.stderr)
	}
	if n := len(resultLines(t, filepath.Join(dir, "out", "results.jsonl"))); n != len(partial) {
		t.Fatalf("the refused resume left %d cases, want the %d written before", n, len(partial))
	}

	// The same judge, answering again.
	srv.SetDefault(gevalGood())
	before := srv.Calls()
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--resume", "--no-progress")
	if r.code != exitOK {
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
	if calls := srv.Calls() - before; calls >= 25 {
		t.Fatalf("resume made %d calls; it should skip the %d finished cases", calls, len(partial))
	}
}

func copyExample(t *testing.T, name string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for _, f := range []string{"anvil.yaml", "cases.jsonl", "judge-session.jsonl"} {
		if _, err := os.Stat(filepath.Join("../../../examples", name, f)); os.IsNotExist(err) && *updateRecording {
			continue // about to be recorded
		}
		b := mustRead(t, filepath.Join("../../../examples", name, f))
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

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--no-progress", "--store", filepath.Join(dir, "record.db"))
	if r.code != exitThreshold {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if *updateRecording {
		dst, _ := filepath.Abs("../../../examples/dag/judge-session.jsonl")
		if r := runBinary(t, dir, nil, "cache", "export", "--store", filepath.Join(dir, "record.db"), "--note", recordingNote, "-o", dst); r.code != 0 {
			t.Fatalf("export: %s", r.stderr)
		}
		b := mustRead(t, dst)
		os.WriteFile(filepath.Join(dir, "judge-session.jsonl"), b, 0o644)
	}
	// Offline, the recorded session gives the same scores.
	off := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "offline", "--no-progress")
	if off.code != exitThreshold || !strings.Contains(off.stdout, "REPLAYED") {
		t.Fatalf("offline: exit %d\n%s\n%s", off.code, off.stdout, off.stderr)
	}
	for _, l := range resultLines(t, filepath.Join(dir, "offline", "results.jsonl")) {
		if l.Metrics[0].Score == nil {
			t.Fatalf("offline %s: no score: %+v", l.CaseID, l.Metrics[0])
		}
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
