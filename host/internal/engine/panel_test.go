package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// panelConfig configures judges a, b, c on one server (models ma, mb,
// mc) and metrics.
func panelConfig(url, metrics string) string {
	judge := func(name string) string {
		return fmt.Sprintf("  %s:\n    base_url: %s\n    model: m%s\n    api_key_env: ANVIL_TEST_KEY\n    supports_logprobs: true\n    supports_json_schema: true\n    price: {input_per_million: 1, output_per_million: 2}\n", name, url, name)
	}
	return "version: 1\ndataset: cases.jsonl\njudges:\n" + judge("a") + judge("b") + judge("c") + "defaults:\n  judge: a\nmetrics:\n" + metrics
}

// panelJudge scores by model: a says 8, b 6, c 2, on every case.
func panelJudge(t *testing.T) *judgetest.Server {
	s := judgetest.New(t)
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	s.On(judgetest.Model("ma"), judgetest.JSONScoreReply("a", "8", nil))
	s.On(judgetest.Model("mb"), judgetest.JSONScoreReply("b", "6", nil))
	s.On(judgetest.Model("mc"), judgetest.JSONScoreReply("c", "2", nil))
	return s
}

func panelMetric(aggregate string, threshold float64) string {
	return fmt.Sprintf(`  - name: panel
    kind: geval
    judges: [a, b, c]
    aggregate: %s
    threshold: %v
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`, aggregate, threshold)
}

// Each judge of a panel scores every case with its own model; the
// aggregation decides the score and verdict (a .8, b .6, c .2 against
// .55: mean .5333 fails, median .6 passes, two of three pass the
// majority); the summary reports how the judges agree.
func TestPanelAggregatesItsJudges(t *testing.T) {
	for _, tc := range []struct {
		aggregate string
		score     float64
		status    string
		reason    string
	}{
		{"mean", 1.6 / 3, results.StatusFailed, "mean of 3 judges 0.5333 (a 0.8, b 0.6, c 0.2)"},
		{"median", 0.6, results.StatusPassed, "median of 3 judges 0.6 (a 0.8, b 0.6, c 0.2)"},
		{"majority", 1.6 / 3, results.StatusPassed, "2 of 3 judges pass (majority decides; mean 0.5333: a 0.8, b 0.6, c 0.2)"},
	} {
		t.Run(tc.aggregate, func(t *testing.T) {
			srv := panelJudge(t)
			e := newEnv(t, panelConfig(srv.URL(), panelMetric(tc.aggregate, 0.55)))
			s := e.run(t, "off", engine.RunOptions{})
			perModel := map[string]int{}
			for _, r := range srv.Requests() {
				if !strings.Contains(r.LastMessage(), `"steps"`) {
					perModel[r.Model]++
				}
			}
			// Steps come from the first judge, once; each judge scores the
			// three cases with an expected output.
			if fmt.Sprint(perModel) != "map[ma:3 mb:3 mc:3]" || srv.Calls() != 10 {
				t.Fatalf("scoring calls per model %v, %d in all; want 3 each and 10", perModel, srv.Calls())
			}
			mr := readResults(t, e.out)["c1"].Metrics[0]
			if mr.Score == nil || !near(*mr.Score, tc.score) || mr.Status != tc.status || !strings.HasPrefix(mr.Reason, tc.reason) {
				t.Errorf("c1: score %v status %s reason %q; want %v %s %q", mr.Score, mr.Status, mr.Reason, tc.score, tc.status, tc.reason)
			}
			if len(mr.Panel) != 3 || mr.Panel[2].Judge != "c" || mr.Panel[2].Model != "mc" || mr.Panel[2].Status != results.StatusFailed || mr.Aggregate != tc.aggregate {
				t.Errorf("c1 panel = %+v (%s); want a, b, c with c failing", mr.Panel, mr.Aggregate)
			}
			if mr.Usage.Calls != 3 {
				t.Errorf("c1 usage calls = %d; want the panel's 3", mr.Usage.Calls)
			}
			pa := s.Metrics[0].Panel
			if pa == nil || pa.Cases != 3 || pa.MeanAbsDiff == nil || *pa.MeanAbsDiff != 0.4 || *pa.VerdictAgreement != 0 ||
				fmt.Sprint(pa.JudgeMeans) != "[0.8 0.6 0.2]" || len(pa.Pairs) != 3 || pa.Pairs[1].A != "a" || pa.Pairs[1].B != "c" || pa.Pairs[1].MeanAbsDiff != 0.6 {
				t.Errorf("agreement = %+v; want 3 cases, mean |diff| .4 (.2, .6, .4), no verdict agreement, means [.8 .6 .2]", pa)
			}
			// Every case gets .8, .6, .2 (verdicts pass, pass, fail): the
			// disagreement is all within cases, α = 1 − (28/150)/(21/150).
			if pa == nil || pa.Alpha == nil || *pa.Alpha != -0.3333 || pa.AlphaVerdicts == nil || *pa.AlphaVerdicts != -0.3333 {
				t.Errorf("Krippendorff's alpha = %v, verdicts %v; want -0.3333 both", pa.Alpha, pa.AlphaVerdicts)
			}
		})
	}
}

// Every judge of a panel must be callable: one without a key skips the
// metric with the message saying how to configure it.
func TestPanelWithAnUnavailableJudgeSkips(t *testing.T) {
	srv := panelJudge(t)
	cfg := panelConfig(srv.URL(), panelMetric("mean", 0.5))
	cfg = strings.Replace(cfg, "  c:\n    base_url: "+srv.URL(), "  c:\n    base_url: https://judge-c.invalid/v1", 1)
	cfg = strings.Replace(cfg, "model: mc\n    api_key_env: ANVIL_TEST_KEY", "model: mc\n    api_key_env: NO_SUCH_KEY", 1)
	e := newEnv(t, cfg)
	s := e.run(t, "off", engine.RunOptions{})
	if s.Metrics[0].Skipped != 4 || !strings.Contains(s.Metrics[0].SkipReason, "NO_SUCH_KEY") {
		t.Errorf("summary %+v; want all 4 cases skipped naming NO_SUCH_KEY", s.Metrics[0])
	}
}

// A panel or samples on a kind that calls no judge is a config error
// naming the metric: its score cannot vary.
func TestRepeatsOnAJudgeFreeKindAreRefused(t *testing.T) {
	for _, tc := range []struct{ metric, want string }{
		{"  - {name: exact, kind: liar, samples: 3}\n", "metric exact: samples: 3: kind liar calls no judge"},
		{"  - {name: exact, kind: liar, judges: [a, b]}\n", "metric exact: judges: [a, b]: kind liar calls no judge"},
	} {
		e := newEnv(t, panelConfig("http://127.0.0.1:9/v1", tc.metric))
		if err := loadErrWithLiar(t, e); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "anvil.yaml:") {
			t.Errorf("load error %v; want %q with the file and line", err, tc.want)
		}
	}
}

func loadErrWithLiar(t *testing.T, e env) error {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		return err
	}
	opts := engine.Options{Cache: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "k" }}
	engine.WithInprocPlugins(&opts, liar())
	eng, err := engine.New(context.Background(), cfg, opts)
	if err == nil {
		eng.Close(context.Background())
	}
	return err
}

// A panel's judges score with one set of G-Eval steps, the first judge's
// (docs/RATIONALE.md, "Why do a panel's judges share the first judge's
// G-Eval steps?"): one steps call, to the first judge's model, and every
// judge's scoring prompt holds those steps — never another judge's.
func TestPanelJudgesShareTheFirstJudgesSteps(t *testing.T) {
	srv := judgetest.New(t)
	steps := judgetest.ContainsMessage(`"steps"`)
	srv.On(judgetest.All(steps, judgetest.Model("ma")), judgetest.Reply{Content: `{"steps": ["Step of a.", "Check.", "Penalise."]}`})
	srv.On(steps, judgetest.Reply{Content: `{"steps": ["Step of another judge.", "Check.", "Penalise."]}`})
	srv.On(judgetest.Model("ma"), judgetest.JSONScoreReply("a", "8", nil))
	srv.On(judgetest.Model("mb"), judgetest.JSONScoreReply("b", "6", nil))
	srv.On(judgetest.Model("mc"), judgetest.JSONScoreReply("c", "2", nil))
	e := newEnv(t, panelConfig(srv.URL(), panelMetric("mean", 0.5)))
	e.run(t, "off", engine.RunOptions{})
	var stepModels []string
	scored := map[string]int{}
	for _, r := range srv.Requests() {
		last := r.LastMessage()
		if strings.Contains(last, `"steps"`) {
			stepModels = append(stepModels, r.Model)
			continue
		}
		// The steps are in the system message (static-first), the case
		// after them.
		var prompt strings.Builder
		for _, m := range r.Messages {
			prompt.WriteString(m.Content + "\n")
		}
		if !strings.Contains(prompt.String(), "Step of a.") || strings.Contains(prompt.String(), "Step of another judge.") {
			t.Errorf("model %s scored without the first judge's steps:\n%s", r.Model, prompt.String())
		}
		scored[r.Model]++
	}
	if fmt.Sprint(stepModels) != "[ma]" || fmt.Sprint(scored) != "map[ma:3 mb:3 mc:3]" {
		t.Errorf("steps asked of %v, scorings %v; want one steps call to ma, 3 scorings per judge", stepModels, scored)
	}
}
