package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/store"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/sdk"
)

// liarConfig scripts what the liar plugin claims.
type liarConfig struct {
	Score      *float64 `json:"score,omitempty"`
	Success    bool     `json:"success,omitempty"`
	Threshold  float64  `json:"threshold,omitempty"`
	StrictMode bool     `json:"strict_mode,omitempty"`
	// SkipMessage, when set, makes every case a missing_field skip with it.
	SkipMessage string `json:"skip_message,omitempty"`
}

// liar is a plugin that reports whatever its config says, including a
// success and a threshold that contradict its score.
func liar() *sdk.Plugin {
	return &sdk.Plugin{Name: "liar", Version: "0.0.1", Kinds: []sdk.Kind{
		&sdk.MetricKind[liarConfig]{Name: "liar",
			Measure: func(_ context.Context, _ sdk.Host, c *liarConfig, _ *abi.MeasureRequest) (*abi.MeasureResult, error) {
				if c.SkipMessage != "" {
					return &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeMissingField, Field: "x", Message: c.SkipMessage}}, nil
				}
				return &abi.MeasureResult{Score: c.Score, Success: c.Success, Threshold: c.Threshold}, nil
			}},
	}}
}

// runWith loads cfg beside the test cases (or body, when given) and runs it
// with the liar plugin linked in. It returns the summary and Run's error.
func runWith(t *testing.T, cfg, body string, ro engine.RunOptions) (env, *results.Summary, error) {
	t.Helper()
	e := newEnv(t, cfg)
	if body != "" {
		writeFiles(t, e.dir, map[string]string{"cases.jsonl": body})
	}
	s, err := e.runErr(t, context.Background(), "off", ro)
	return e, s, err
}

func (e env) runErr(t *testing.T, ctx context.Context, cache string, ro engine.RunOptions) (*results.Summary, error) {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{Cache: cache, StorePath: e.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv}
	engine.WithInprocPlugins(&opts, liar())
	eng, err := engine.New(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if ro.OutputDir == "" {
		ro.OutputDir = e.out
	}
	return eng.Run(ctx, ro)
}

func liarMetric(params string, extra string) string {
	return `version: 1
dataset: cases.jsonl
metrics:
  - name: lie
    kind: liar
    threshold: 0.8
` + extra + `    params: ` + params + "\n"
}

func TestTheHostDecidesTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		wantStatus   string
		wantCode     abi.Code
		wantVerdict  string
	}{
		// The README's old snippet: success true whatever the score.
		{"success claimed under threshold", `{score: 0.2, success: true}`, results.StatusFailed, "", results.VerdictFailed},
		{"threshold lowered by the guest", `{score: 0.5, success: true, threshold: 0.1}`, results.StatusFailed, "", results.VerdictFailed},
		{"failure claimed over threshold", `{score: 0.9, success: false}`, results.StatusPassed, "", results.VerdictPassed},
		{"strict mode is the host's", `{score: 0.95, success: true, strict_mode: true}`, results.StatusFailed, "", results.VerdictFailed},
		{"score above 1", `{score: 1.5, success: true}`, results.StatusError, abi.CodeABI, results.VerdictUnverified},
		{"score below 0", `{score: -0.1, success: true}`, results.StatusError, abi.CodeABI, results.VerdictUnverified},
		{"no score and no error", `{success: true}`, results.StatusError, "", results.VerdictUnverified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, s, err := runWith(t, liarMetric(tc.params, ""), "", engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := readResults(t, e.out)["c1"].Metrics[0]
			if r.Status != tc.wantStatus {
				t.Fatalf("status %s, want %s (%+v)", r.Status, tc.wantStatus, r)
			}
			if tc.wantCode != "" && (r.Error == nil || r.Error.Code != tc.wantCode) {
				t.Fatalf("error %v, want %s", r.Error, tc.wantCode)
			}
			if s.Verdict != tc.wantVerdict || s.Passed != (tc.wantVerdict == results.VerdictPassed) {
				t.Fatalf("run verdict %s (passed %v), want %s", s.Verdict, s.Passed, tc.wantVerdict)
			}
			if strings.Contains(tc.params, "strict_mode") && r.Threshold != 1 {
				t.Fatalf("threshold %v under strict mode, want 1", r.Threshold)
			}
		})
	}
}

func TestAGateThatVerifiedNothingDoesNotPass(t *testing.T) {
	noKey := `version: 1
dataset: cases.jsonl
judges:
  default: {model: m, api_key_env: ANVIL_NO_SUCH_KEY, base_url: "https://judge.invalid/v1"}
metrics:
` + correctness
	_, s, err := runWith(t, noKey, "", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdict != results.VerdictUnverified || s.Passed {
		t.Fatalf("verdict %s passed %v, want unverified", s.Verdict, s.Passed)
	}
	if len(s.Unverified) != 1 || !strings.Contains(s.Unverified[0], "correctness") || !strings.Contains(s.Unverified[0], "all 4 skipped") {
		t.Fatalf("unverified = %q", s.Unverified)
	}

	// An informational metric that scored nothing does not gate.
	_, s, err = runWith(t, strings.Replace(noKey, "    threshold: 0.5\n", "    threshold: 0.5\n    gate: false\n", 1), "", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdict != results.VerdictPassed {
		t.Fatalf("informational metric: verdict %s, want passed", s.Verdict)
	}
}

func TestAnEmptyDatasetIsUnverified(t *testing.T) {
	_, s, err := runWith(t, liarMetric(`{score: 1, success: true}`, ""), "\n# nothing here\n", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != 0 || s.Verdict != results.VerdictUnverified || !strings.Contains(strings.Join(s.Unverified, ";"), "no cases") {
		t.Fatalf("empty dataset: cases %d verdict %s unverified %q", s.Cases, s.Verdict, s.Unverified)
	}
}

func TestMaxErrorRate(t *testing.T) {
	srv := fakeJudge(t)
	srv.On(judgetest.ContainsMessage("sqrt"), judgetest.Reply{Status: 400, ErrorMessage: "bad request"})
	// c2 (Sydney) fails its threshold; drop it so only the error decides.
	body := strings.Replace(cases, "Sydney.", "Canberra.", 1)
	for _, tc := range []struct {
		extra, want string
	}{
		{"", results.VerdictUnverified}, // default 0: one error in 4 is too many
		{"    max_error_rate: 0.25\n", results.VerdictPassed},
		{"    max_error_rate: 0.2\n", results.VerdictUnverified},
	} {
		cfg := configFor(srv.URL(), true, strings.Replace(correctness, "    threshold: 0.5\n", "    threshold: 0.5\n"+tc.extra, 1))
		_, s, err := runWith(t, cfg, body, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := s.Metrics[0]
		if s.Verdict != tc.want || m.Errors != 1 || m.ErrorRate != 0.25 {
			t.Fatalf("%q: verdict %s, errors %d, rate %v; want %s", tc.extra, s.Verdict, m.Errors, m.ErrorRate, tc.want)
		}
		if tc.want == results.VerdictUnverified && !strings.Contains(m.UnverifiedReason, "max_error_rate") {
			t.Fatalf("reason %q does not name max_error_rate", m.UnverifiedReason)
		}
	}
}

func TestTheDatasetIsCheckedBeforeTheFirstJudgeCall(t *testing.T) {
	srv := fakeJudge(t)
	for name, body := range map[string]string{
		"duplicate id": cases + `{"id": "c2", "input": "again", "actual_output": "x", "expected_output": "y"}` + "\n",
		"bad record":   cases + "{not json\n",
	} {
		t.Run(name, func(t *testing.T) {
			before := srv.Calls()
			e, s, err := runWith(t, configFor(srv.URL(), true, correctness), body, engine.RunOptions{})
			var re *engine.RunError
			if !errors.As(err, &re) || re.Kind != engine.ErrInput {
				t.Fatalf("err = %v, want an input error", err)
			}
			if !strings.Contains(err.Error(), "cases.jsonl:5") {
				t.Fatalf("error %q does not name the line", err)
			}
			if s != nil || srv.Calls() != before {
				t.Fatalf("the judge was called %d times before the bad record was found", srv.Calls()-before)
			}
			if _, err := os.Stat(filepath.Join(e.out, "results.jsonl")); !os.IsNotExist(err) {
				t.Fatalf("results.jsonl exists after a refused dataset: %v", err)
			}
		})
	}
}

func TestANewRunNeverLeavesTheLastRunsOutputs(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	if _, err := e.runErr(t, context.Background(), "off", engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"junit.xml", "report.html"} { // as the CLI writes them
		writeFiles(t, e.out, map[string]string{f: "from the first run"})
	}
	first, _ := os.ReadDir(filepath.Join(e.out, "cases"))
	if len(first) != 4 {
		t.Fatalf("first run wrote %d case files", len(first))
	}

	// The second run stops after its first case.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	s, err := e.runErr(t, ctx, "off", engine.RunOptions{Concurrency: 1, Progress: func(done, total int) {
		if n.Add(1) == 1 {
			cancel()
		}
	}})
	var re *engine.RunError
	if !errors.As(err, &re) || re.Kind != engine.ErrInterrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
	for _, f := range []string{"junit.xml", "report.html"} {
		if _, err := os.Stat(filepath.Join(e.out, f)); !os.IsNotExist(err) {
			t.Errorf("%s of the first run is still there", f)
		}
	}
	var written results.Summary
	b, err := os.ReadFile(filepath.Join(e.out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if written.Verdict != results.VerdictIncomplete || written.Incomplete == nil || !strings.Contains(written.Incomplete.Resume, "--resume") ||
		written.RunID == "" || written.StartedAt.IsZero() || s == nil || s.RunID != written.RunID {
		t.Fatalf("summary.json = %s", b)
	}
	results := readResults(t, e.out)
	files, _ := os.ReadDir(filepath.Join(e.out, "cases"))
	if len(files) != len(results) || written.Cases != len(results) {
		t.Fatalf("%d case files and summary of %d cases for %d results: the first run's cases are mixed in", len(files), written.Cases, len(results))
	}
}

func TestResumeReportsATornLine(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	if _, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.out, "results.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"case_id": "c3", "config_ha`
	f.WriteString(torn)
	f.Close()
	s, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Resume == nil || s.Resume.TornLineBytes != int64(len(torn)) || s.Resume.Done != 2 || s.Cases != 4 {
		t.Fatalf("resume report %+v, cases %d", s.Resume, s.Cases)
	}
}

// TestResumeRewritesATornCaseFile: case files are written in place, so a
// crash can leave one torn, but only before its results line is written;
// --resume evaluates that case again and must replace the file whole (a
// longer torn file must not leave its tail behind).
func TestResumeRewritesATornCaseFile(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	if _, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := results.ReadCase(e.out, "c3"); err == nil {
		t.Fatal("c3 has a case file after a run limited to two cases")
	}
	done, err := results.ReadCase(e.out, "c1")
	if err != nil {
		t.Fatal(err)
	}
	torn := `{"case_id": "c3", "config_hash": "` + strings.Repeat("x", 64<<10)
	if err := os.WriteFile(filepath.Join(e.out, "cases", "c3.json"), []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Resume == nil || s.Resume.Done != 2 || s.Cases != 4 {
		t.Fatalf("resume report %+v, cases %d", s.Resume, s.Cases)
	}
	got, err := results.ReadCase(e.out, "c3")
	if err != nil {
		t.Fatalf("the torn case file was not rewritten: %v", err)
	}
	if got.CaseID != "c3" || got.Case == nil || got.Case.ID != "c3" || len(got.Metrics) != len(done.Metrics) || got.Metrics[0].Status != done.Metrics[0].Status {
		t.Fatalf("c3 after resume = %+v", got)
	}
}

func TestUnreadableCacheEntriesAreReportedInTheSummary(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	e.run(t, "rw", engine.RunOptions{})
	st, err := store.Open(context.Background(), e.store)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	st.EachJudge(context.Background(), func(en store.Entry) error { keys = append(keys, en.Key); return nil })
	for _, k := range keys {
		if err := st.PutJudge(context.Background(), k, "judge-model", []byte("{not a reply")); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	s := e.run(t, "rw", engine.RunOptions{})
	if len(keys) != 4 || s.Cache == nil || s.Cache.Unreadable != int64(len(keys)) {
		t.Fatalf("%d entries corrupted; summary cache = %+v", len(keys), s.Cache)
	}
	// Three scored cases and the steps call (its entry was unreadable too),
	// which the metric's row counts.
	if s.Verdict != results.VerdictFailed || s.Metrics[0].Scored != 3 || s.Metrics[0].Judge.Calls != 4 {
		t.Fatalf("the run must go on calling the judge: %+v", s.Metrics[0])
	}
}

func TestAnEndlessDigestFileIsNotReadWhole(t *testing.T) {
	cfg := `version: 1
dataset: cases.jsonl
plugins:
  x: {path: x.wasm, sha256_file: /dev/zero}
metrics:
  - name: lie
    kind: liar
`
	e := newEnv(t, cfg)
	c, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.New(context.Background(), c, engine.Options{StorePath: e.store, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "plugins.x") {
		t.Fatalf("err = %v, want a refusal naming plugins.x", err)
	}
}

func TestGuestTextIsPrintableInTheSummary(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a\x1b[2Jb", "a\uFFFD[2Jb"},
		{"PASSED\r", "PASSED\uFFFD"},
		{"x\u202Eevil", "x\uFFFDevil"},
		{"tab\tnl\n", "tab\uFFFDnl\uFFFD"},
		{"é ☕", "é ☕"},
	} {
		if got := results.Printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := results.Printable(strings.Repeat("é", 1000)); len(got) > 520 || !strings.HasSuffix(got, "…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("a long text is not cut on a rune boundary: %d bytes", len(got))
	}
	// A plugin's missing_field message reaches the summary (and so the
	// table and stderr) printable.
	_, sum, err := runWith(t, liarMetric(`{skip_message: "gone\u001b]0;pwned\u0007\r"}`, ""), "", engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := sum.Metrics[0]
	if m.Skipped != 4 || m.SkipReason != "gone\uFFFD]0;pwned\uFFFD\uFFFD" || strings.ContainsAny(strings.Join(sum.Unverified, ""), "\x1b\x07\r") {
		t.Fatalf("skip reason %q, unverified %q", m.SkipReason, sum.Unverified)
	}
}
