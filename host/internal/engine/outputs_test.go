package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// outputsJudge answers every metric of outputsMetrics: the DAG's nodes by
// their prompts, G-Eval by model (a 8, b 6, c 2), and a bad request for
// the case about sqrt, which is that case's judge error.
func outputsJudge(t *testing.T) *judgetest.Server {
	s := judgetest.New(t)
	s.On(judgetest.ContainsMessage("sqrt"), judgetest.Reply{Status: 400, ErrorMessage: "bad request"})
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	s.On(judgetest.ContainsMessage("List every claim"), judgetest.Reply{Content: `{"output": "C1: refund window is 30 days"}`})
	s.On(judgetest.ContainsMessage("Are the claims supported"), judgetest.PerRequest(
		judgetest.Reply{Content: `{"reason": "Supported.", "verdict": true}`},
		judgetest.Reply{Content: `{"reason": "Not in the context.", "verdict": false}`},
	))
	s.On(judgetest.ContainsMessage("What is the register"), judgetest.Reply{Content: `{"reason": "Precise.", "verdict": "formal"}`})
	s.On(judgetest.Model("ma"), judgetest.JSONScoreReply("a", "8", map[string]float64{"8": .7, "7": .2, "9": .1}))
	s.On(judgetest.Model("mb"), judgetest.JSONScoreReply("b", "6", nil))
	s.On(judgetest.Model("mc"), judgetest.JSONScoreReply("c", "2", nil))
	return s
}

// outputsMetrics have results of every shape a report draws: passes,
// failures, skips (a case without the field a metric needs), a judge
// error, samples, a panel, and a DAG scored twice per case.
var outputsMetrics = addSamples(correctness, 3) + panelMetric("mean", 0.55) + addSamples(sharedNodeDAG, 2)

// TestOutputsAreBuiltAsResultsAreWritten: summary.json, junit.xml and
// report.html come from the cases as the run writes them, not from
// results.jsonl read back: the file is removed once the last case is
// durable, and the outputs are those a read of the file gives (the
// oracle), byte for byte — for a whole run and for one resumed over an
// earlier run's results, whose cases they cover too, but for the one with
// a retryable error, which is evaluated again.
func TestOutputsAreBuiltAsResultsAreWritten(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before int // cases evaluated by an earlier run; resumed when > 0
		retry  bool
	}{{"whole run", 0, false}, {"resumed", 3, false}, {"resumed with a retryable error", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := outputsJudge(t)
			e := newEnv(t, panelConfig(srv.URL(), outputsMetrics))
			writeFiles(t, e.dir, map[string]string{"cases.jsonl": cases + dagCases})
			path := filepath.Join(e.out, "results.jsonl")
			if tc.before > 0 {
				e.run(t, "off", engine.RunOptions{Limit: tc.before})
			}
			if tc.retry {
				markRetryable(t, path, 2)
			}
			var written []byte
			reports := report.NewBuilder(e.out)
			defer reports.Close()
			s := e.run(t, "off", engine.RunOptions{Resume: tc.before > 0, Sink: reports, Concurrency: 3, Progress: func(done, total int) {
				if done < total {
					return
				}
				// Every case is durable: nothing may read the file now.
				var err error
				if written, err = os.ReadFile(path); err != nil {
					t.Error(err)
				}
				if err := os.Remove(path); err != nil {
					t.Error(err)
				}
			}})
			if written == nil {
				t.Fatal("the run never had every case durable")
			}
			if err := reports.Write(s, ""); err != nil {
				t.Fatal(err)
			}
			streamed := readOutputs(t, e.out)
			retried := 0
			if tc.retry {
				retried = 1
			}
			if s.Cases != 6 || s.Resume != nil && (s.Resume.Done != tc.before-retried || s.Resume.Retried != retried) {
				t.Fatalf("summary of %d cases, resume %+v; want 6 with %d resumed, %d retried", s.Cases, s.Resume, tc.before-retried, retried)
			}
			for _, want := range []string{"skipped", "judge_error", "flip", "krippendorff", "claims_dag"} {
				if !strings.Contains(streamed["summary.json"]+streamed["report.html"], want) {
					t.Errorf("the outputs lack %q: the run does not have every shape of result", want)
				}
			}

			// The oracle: the same outputs from one read of results.jsonl.
			if err := os.WriteFile(path, written, 0o644); err != nil {
				t.Fatal(err)
			}
			oracle := summaryOf(t, e.out, s)
			b, err := json.MarshalIndent(oracle, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := report.Write(e.out, s); err != nil {
				t.Fatal(err)
			}
			read := readOutputs(t, e.out)
			read["summary.json"] = string(b) + "\n"
			for _, name := range []string{"summary.json", "junit.xml", "report.html"} {
				if streamed[name] != read[name] {
					t.Errorf("%s built as the results were written differs from one built from results.jsonl:\n%s", name, firstDifference(streamed[name], read[name]))
				}
			}
			if _, err := os.Stat(filepath.Join(e.out, ".anvil-report-spill")); err == nil {
				t.Error("the reports' spill directory is left in the output directory")
			}
		})
	}
}

// markRetryable rewrites the line'th result of the results.jsonl at path
// as a judge outage, an error marked retryable, in encoding/json's bytes
// (as an earlier version wrote the line).
func markRetryable(t *testing.T, path string, line int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	var r results.CaseResult
	if err := results.DecodeLine([]byte(strings.TrimSuffix(lines[line-1], "\n")), &r); err != nil {
		t.Fatal(err)
	}
	m := &r.Metrics[0]
	m.Status, m.Score, m.ErrorClass = results.StatusError, nil, "judge"
	m.Error = &abi.Error{Code: abi.CodeJudge, Message: "judge returned 503 after 3 attempts", Retryable: true}
	enc, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	lines[line-1] = string(enc) + "\n"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readOutputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"summary.json", "junit.xml", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

// summaryOf summarises dir/results.jsonl as the run s did, with s's own
// fields (its id, times, judges, what it resumed).
func summaryOf(t *testing.T, dir string, s *results.Summary) *results.Summary {
	t.Helper()
	var configured []results.Configured
	rates := map[string]float64{}
	for _, m := range s.Metrics {
		configured = append(configured, results.Configured{Metric: m.Metric, Kind: m.Kind, Threshold: m.Threshold, Gated: m.Gated})
		rates[m.Metric] = m.MaxErrorRate
	}
	z := results.NewSummarizer(configured)
	if err := results.EachIn(dir, z); err != nil {
		t.Fatal(err)
	}
	out := z.Summary(s.ConfigHash, s.Prepare, rates)
	out.RunID, out.StartedAt, out.FinishedAt = s.RunID, s.StartedAt, s.FinishedAt
	out.Resume, out.FieldGaps, out.Judges, out.Identity, out.Cache, out.Graphs = s.Resume, s.FieldGaps, s.Judges, s.Identity, s.Cache, s.Graphs
	out.Decide(s.Incomplete)
	return out
}

// firstDifference shows where a and b part.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return "…" + a[from:min(len(a), i+200)] + "\n---- versus ----\n…" + b[from:min(len(b), i+200)]
}
