package engine_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// spreadJudge answers G-Eval steps, and scores each distinct scoring
// request 2, 5, 9 on its first three repeats: every case's three samples
// are 0.2, 0.5 and 0.9, in some order.
func spreadJudge(t *testing.T) *judgetest.Server {
	s := judgetest.New(t)
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	s.SetDefault(judgetest.PerRequest(
		judgetest.JSONScoreReply("low", "2", nil),
		judgetest.JSONScoreReply("mid", "5", nil),
		judgetest.JSONScoreReply("high", "9", nil),
	))
	return s
}

func withSamples(metric string, n int) string {
	return strings.Replace(metric, "    kind: geval\n", fmt.Sprintf("    kind: geval\n    samples: %d\n", n), 1)
}

// samples: 3 scores each case three times with the judge's spread; the
// verdict is the mean's, the case keeps mean, sd and the samples, and the
// same run again replays them from the cache without a call.
func TestSamplesGiveMeanSpreadAndFlips(t *testing.T) {
	for _, tc := range []struct {
		name     string
		logprobs bool
		mode     string
	}{{"weighted", true, "weighted"}, {"raw", false, "raw"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := spreadJudge(t)
			e := newEnv(t, configFor(srv.URL(), tc.logprobs, withSamples(correctness, 3)))
			s := e.run(t, "rw", engine.RunOptions{})
			// 1 steps call, then 3 samples of each of the 3 cases with an
			// expected output (c4 is skipped).
			if srv.Calls() != 1+3*3 {
				t.Fatalf("judge calls = %d; want 10", srv.Calls())
			}
			res := readResults(t, e.out)
			for _, id := range []string{"c1", "c2", "c3"} {
				mr := res[id].Metrics[0]
				sp := mr.Spread
				if sp == nil || len(sp.Scores) != 3 {
					t.Fatalf("%s: spread %+v; want 3 samples", id, sp)
				}
				sum := sp.Scores[0] + sp.Scores[1] + sp.Scores[2]
				if !near(sum, 1.6) || !near(sp.Mean, 1.6/3) || math.Abs(sp.StdDev-0.351188458) > 1e-6 || !sp.Flipped {
					t.Errorf("%s: spread %+v; want samples {.2 .5 .9}, mean .5333, sd .3512, flipped", id, sp)
				}
				if mr.Score == nil || !near(*mr.Score, 1.6/3) || mr.Status != results.StatusPassed || mr.ScoreMode != tc.mode {
					t.Errorf("%s: score %v status %s mode %s; want the mean .5333 passing at .5 in %s mode", id, mr.Score, mr.Status, mr.ScoreMode, tc.mode)
				}
				if mr.Usage.Calls != 3 || !strings.HasPrefix(mr.Reason, "mean of 3 samples 0.5333") {
					t.Errorf("%s: calls %d, reason %q; want 3 calls and the mean in the reason", id, mr.Usage.Calls, mr.Reason)
				}
			}
			m := s.Metrics[0]
			if m.Passed != 3 || m.Sampled != 3 || m.FlipShare == nil || *m.FlipShare != 1 {
				t.Errorf("summary: passed %d, sampled %d, flip share %v; want 3, 3, 1", m.Passed, m.Sampled, m.FlipShare)
			}
			if m.MeanSampleSD == nil || math.Abs(*m.MeanSampleSD-0.3512) > 1e-4 {
				t.Errorf("summary mean sample sd = %v; want .3512", m.MeanSampleSD)
			}
			// Every case flipped: 3 of 3, whose 95% Wilson interval is [.4385, 1].
			if ci := m.FlipShareCI; ci == nil || ci.Low != 0.4385 || ci.High != 1 || ci.N != 3 {
				t.Errorf("flip share CI = %+v; want [.4385, 1] over 3 cases", ci)
			}
			if ci := m.MeanCI; ci == nil || ci.Estimate != 0.5333 || ci.Low != 0.5333 || ci.High != 0.5333 || ci.Resamples == 0 {
				t.Errorf("mean CI = %+v; want the point .5333 (every case has the same mean)", ci)
			}

			again := newEnvIn(e, t.TempDir())
			e.run(t, "rw", engine.RunOptions{OutputDir: again.out})
			if srv.Calls() != 10 {
				t.Errorf("the cached rerun made %d more calls; want none", srv.Calls()-10)
			}
			for id, cr := range readResults(t, again.out) {
				if a, b := cr.Metrics[0].Spread, res[id].Metrics[0].Spread; (a == nil) != (b == nil) || a != nil && fmt.Sprint(a.Scores) != fmt.Sprint(b.Scores) {
					t.Errorf("%s: the cached rerun's samples %v differ from the run's %v", id, a, b)
				}
			}
		})
	}
}

// G-Eval's own sampling (params.samples, for a judge without logprobs)
// and the metric's samples multiply: 3 metric samples × 3 score samples.
func TestMetricSamplesOfASampledScore(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), false, withSamples(sampledGEval, 3)))
	e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 1+3*3*3 {
		t.Fatalf("judge calls = %d; want 1 + 27", srv.Calls())
	}
	mr := readResults(t, e.out)["c1"].Metrics[0]
	if mr.ScoreMode != "sampled" || mr.Spread == nil || mr.Spread.StdDev != 0 || mr.Spread.Flipped {
		t.Errorf("c1: mode %s spread %+v; want sampled with no spread (the judge always says 8)", mr.ScoreMode, mr.Spread)
	}
}

func newEnvIn(e env, out string) env {
	e.out = out
	return e
}

// Every metric's summary carries its mean with a bootstrap interval and
// its pass rate with a Wilson interval; the bootstrap is seeded by the
// metric, so the same results give the same interval.
func TestSummaryIntervals(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	s := e.run(t, "rw", engine.RunOptions{})
	m := s.Metrics[0] // .79, .21, .79: two of three pass
	if ci := m.PassRateCI; ci == nil || ci.Estimate != 0.6667 || ci.Low != 0.2077 || ci.High != 0.9385 {
		t.Errorf("pass rate CI = %+v; want 2/3 in [.2077, .9385]", ci)
	}
	ci := m.MeanCI
	if ci == nil || ci.Estimate != 0.5967 || !(ci.Low < ci.Estimate && ci.Estimate < ci.High) || ci.Low < 0.21 || ci.High > 0.79 {
		t.Fatalf("mean CI = %+v; want .5967 inside an interval within [.21, .79]", ci)
	}
	again := e.run(t, "rw", engine.RunOptions{OutputDir: t.TempDir()})
	if fmt.Sprint(*again.Metrics[0].MeanCI) != fmt.Sprint(*ci) {
		t.Errorf("the same results gave intervals %+v and %+v", *ci, *again.Metrics[0].MeanCI)
	}
	if m.Histogram[2] != 1 || m.Histogram[7] != 2 {
		t.Errorf("histogram = %v; want .21 in bin 2 and two .79 in bin 7", m.Histogram)
	}
}

// A dag metric with samples walks its graph once per sample; the summary
// outlines the graph for the report.
func TestDAGSamplesAndOutline(t *testing.T) {
	srv := everyKindJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, addSamples(sharedNodeDAG, 2)))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": dagCases})
	s := e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 2*2*3 {
		t.Fatalf("judge calls = %d; want 2 cases × 2 samples × 3 nodes", srv.Calls())
	}
	mr := readResults(t, e.out)["grounded"].Metrics[0]
	if mr.Spread == nil || fmt.Sprint(mr.Spread.Scores) != "[1 1]" || mr.Score == nil || *mr.Score != 1 {
		t.Errorf("grounded: score %v spread %+v; want 1 from samples [1 1]", mr.Score, mr.Spread)
	}
	if len(s.Graphs) != 1 || s.Graphs[0].Metric != "claims_dag" || len(s.Graphs[0].Nodes) != 6 || len(s.Graphs[0].Edges) != 6 {
		t.Errorf("graphs = %+v; want the claims_dag outline: 3 nodes + 3 leaves, 6 edges", s.Graphs)
	}
}

// A judge that supports n answers a case's three samples with one call
// of three choices: choice i is sample i's reply (and cache entry), so
// the spread is the choices' and a cached rerun replays it.
func TestSamplesShareOneCallWithN(t *testing.T) {
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	mk := func(v string) judgetest.Choice {
		r := judgetest.JSONScoreReply("r"+v, v, nil)
		return judgetest.Choice{Content: r.Content, Logprobs: r.Logprobs}
	}
	srv.SetDefault(judgetest.Reply{Choices: []judgetest.Choice{mk("2"), mk("5"), mk("9")}})
	e := newEnv(t, configWithN(configFor(srv.URL(), true, withSamples(correctness, 3)), true))
	s := e.run(t, "rw", engine.RunOptions{})
	if srv.Calls() != 1+3 {
		t.Fatalf("judge calls = %d; want 1 steps call and one call per case", srv.Calls())
	}
	for _, r := range srv.Requests()[1:] {
		if r.N != 3 {
			t.Errorf("a scoring call asked for n=%d; want 3", r.N)
		}
	}
	res := readResults(t, e.out)
	for _, id := range []string{"c1", "c2", "c3"} {
		mr := res[id].Metrics[0]
		if mr.Spread == nil || fmt.Sprint(mr.Spread.Scores) != "[0.2 0.5 0.9]" || mr.Usage.Calls != 1 {
			t.Errorf("%s: spread %+v, calls %d; want samples [0.2 0.5 0.9] from one call", id, mr.Spread, mr.Usage.Calls)
		}
	}
	if s.Judge.Calls != 4 {
		t.Errorf("summary judge calls = %d; want 4", s.Judge.Calls)
	}
	again := e.run(t, "rw", engine.RunOptions{OutputDir: t.TempDir()})
	if srv.Calls() != 4 || again.Metrics[0].Mean == nil || *again.Metrics[0].Mean != *s.Metrics[0].Mean {
		t.Errorf("cached rerun: %d calls in all, mean %v; want no new call and the same mean", srv.Calls(), again.Metrics[0].Mean)
	}
}

// The statement metrics sample their whole pipeline: each sample extracts
// and judges again (the fake judge answers alike, so no spread).
func TestStatementMetricsWithSamples(t *testing.T) {
	srv := everyKindJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, addSamples(ragMetrics, 2)))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": ragCases})
	s := e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 2*(3*2+3*3) {
		t.Fatalf("judge calls = %d; want twice the 15 of one scoring", srv.Calls())
	}
	for id, cr := range readResults(t, e.out) {
		for _, mr := range cr.Metrics {
			if mr.Spread == nil || len(mr.Spread.Scores) != 2 || mr.Spread.Scores[0] != mr.Spread.Scores[1] || mr.Spread.StdDev != 0 || mr.Score == nil {
				t.Errorf("%s %s: score %v spread %+v; want two equal samples", id, mr.Metric, mr.Score, mr.Spread)
			}
		}
	}
	for _, m := range s.Metrics {
		if m.Sampled != 3 || m.FlipShare == nil || *m.FlipShare != 0 {
			t.Errorf("%s: sampled %d, flip share %v; want 3 cases, none flipping", m.Metric, m.Sampled, m.FlipShare)
		}
	}
}
