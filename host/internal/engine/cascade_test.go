package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// cascadeConfig configures judge cheap on one server and strong on
// another, at prices 100 times apart, and metrics.
func cascadeConfig(cheapURL, strongURL, metrics string) string {
	judge := func(name, url, price string) string {
		return fmt.Sprintf("  %s:\n    base_url: %s\n    model: m-%s\n    api_key_env: ANVIL_TEST_KEY\n    supports_logprobs: true\n    supports_json_schema: true\n    price: %s\n", name, url, name, price)
	}
	return "version: 1\ndataset: cases.jsonl\njudges:\n" +
		judge("cheap", cheapURL, "{input_per_million: 0.1, output_per_million: 0.2}") +
		judge("strong", strongURL, "{input_per_million: 10, output_per_million: 20}") +
		"metrics:\n" + metrics
}

const cascadeMetric = `  - name: correctness
    kind: geval
    threshold: 0.5
    judge_cascade: [cheap, strong]
    escalate_band: [0.15, 0.85]
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`

// The cheap judge is sure of c1 (every candidate 7..9 passes: P(pass) 1)
// and of c2 (2 or 3: P(pass) 0); on c3 it spreads its mass (4: .5, 5: .3,
// 6: .2 → P(pass) .5) and the strong judge, asked only then, decides.
func TestCascadeEscalatesOnlyTheUnsureCase(t *testing.T) {
	cheap := judgetest.New(t)
	cheap.On(judgetest.ContainsMessage("Sydney"), judgetest.JSONScoreReply("Wrong.", "2", map[string]float64{"2": .9, "3": .1}))
	cheap.On(judgetest.ContainsMessage("sqrt"), judgetest.JSONScoreReply("Unsure.", "4", map[string]float64{"4": .5, "5": .3, "6": .2}))
	cheap.SetDefault(judgetest.JSONScoreReply("Right.", "8", map[string]float64{"8": .7, "7": .2, "9": .1}))
	strong := judgetest.New(t)
	strong.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	strong.SetDefault(judgetest.JSONScoreReply("Right.", "9", map[string]float64{"9": 1}))

	e := newEnv(t, cascadeConfig(cheap.URL(), strong.URL(), cascadeMetric))
	s := e.run(t, "off", engine.RunOptions{})

	// Steps from the strong judge (the cascade's judge of record), once;
	// the cheap judge scores c1..c3 (c4 has no expected output); the
	// strong judge scores c3 alone.
	if cheap.Calls() != 3 || strong.Calls() != 2 {
		t.Fatalf("calls: cheap %d, strong %d; want 3 and 2 (steps + c3)", cheap.Calls(), strong.Calls())
	}
	res := readResults(t, e.out)
	for _, tc := range []struct {
		id, decidedBy, because string
		pPass, score           float64
		status                 string
	}{
		{"c1", "cheap", "", 1, 0.79, results.StatusPassed},
		{"c2", "cheap", "", 0, 0.21, results.StatusFailed},
		{"c3", "strong", "P(pass) 0.5 from cheap (candidates) is inside [0.15, 0.85]", 0.5, 0.9, results.StatusPassed},
	} {
		mr := res[tc.id].Metrics[0]
		if mr.DecidedBy != tc.decidedBy || mr.EscalatedBecause != tc.because || mr.PPass == nil || !near(*mr.PPass, tc.pPass) ||
			mr.PPassFrom != engine.PPassCandidates || mr.Score == nil || !near(*mr.Score, tc.score) || mr.Status != tc.status {
			t.Errorf("%s: decided_by %q p_pass %v (%s) because %q score %v %s; want %q %v %q %v %s", tc.id, mr.DecidedBy, mr.PPass, mr.PPassFrom,
				mr.EscalatedBecause, mr.Score, mr.Status, tc.decidedBy, tc.pPass, tc.because, tc.score, tc.status)
		}
	}
	// c3's usage is both judges' calls; c1's strong-only cost is its
	// cheap tokens at the strong judge's prices (100 times the cheap).
	c1, c3 := res["c1"].Metrics[0], res["c3"].Metrics[0]
	if c3.Usage.Calls != 2 || c1.Usage.Calls != 1 {
		t.Errorf("calls: c3 %d, c1 %d; want 2 and 1", c3.Usage.Calls, c1.Usage.Calls)
	}
	if c1.StrongOnlyUSD == nil || !near(*c1.StrongOnlyUSD, 100*c1.Usage.USD) || c1.Usage.USD == 0 {
		t.Errorf("c1 strong-only USD %v, spent %v; want 100 times what it spent", c1.StrongOnlyUSD, c1.Usage.USD)
	}
	cs := s.Metrics[0].Cascade
	if cs == nil || cs.Cases != 3 || cs.Escalated != 1 || cs.EscalationShare != 0.3333 || fmt.Sprint(cs.DecidedBy) != "map[cheap:2 strong:1]" {
		t.Fatalf("summary cascade %+v; want 3 cases, 1 escalated (.3333), cheap 2 strong 1", cs)
	}
	var spent, strongOnly float64
	for _, id := range []string{"c1", "c2", "c3"} {
		mr := res[id].Metrics[0]
		spent += mr.Usage.USD
		strongOnly += *mr.StrongOnlyUSD
	}
	if !near(cs.USD, spent) || !near(cs.StrongOnlyUSD, strongOnly) || !near(cs.SavedUSD, strongOnly-spent) || cs.SavedUSD <= 0 {
		t.Errorf("summary USD %v strong-only %v saved %v; want %v, %v, their difference > 0", cs.USD, cs.StrongOnlyUSD, cs.SavedUSD, spent, strongOnly)
	}
}

// A judge without a distribution (no logprobs: one raw integer) gives
// P(pass) 0 or 1 and decides every case itself, saying where its P(pass)
// came from.
func TestCascadeWithoutADistributionNeverEscalates(t *testing.T) {
	cheap := judgetest.New(t)
	cheap.SetDefault(judgetest.JSONScoreReply("Unsure.", "5", map[string]float64{"4": .5, "5": .5}))
	strong := judgetest.New(t)
	strong.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	cfg := cascadeConfig(cheap.URL(), strong.URL(), cascadeMetric)
	cfg = strings.Replace(cfg, "model: m-cheap\n    api_key_env: ANVIL_TEST_KEY\n    supports_logprobs: true", "model: m-cheap\n    api_key_env: ANVIL_TEST_KEY\n    supports_logprobs: false", 1)
	e := newEnv(t, cfg)
	e.run(t, "off", engine.RunOptions{})
	if strong.Calls() != 1 {
		t.Errorf("strong judge calls %d; want the steps call only", strong.Calls())
	}
	mr := readResults(t, e.out)["c1"].Metrics[0]
	if mr.DecidedBy != "cheap" || mr.PPass == nil || *mr.PPass != 1 || mr.PPassFrom != engine.PPassVerdict || mr.EscalatedBecause != "" {
		t.Errorf("c1: decided_by %q p_pass %v from %q because %q; want cheap, 1 from verdict", mr.DecidedBy, mr.PPass, mr.PPassFrom, mr.EscalatedBecause)
	}
}

// A DAG under a cascade walks with every judge node on the cheap judge;
// with samples its P(pass) is the share of walks that pass, and a case
// whose walks disagree is walked again by the strong judge.
func TestCascadeOverADAGsJudgeNodes(t *testing.T) {
	const dag = `  - name: grounded_dag
    kind: dag
    threshold: 0.5
    samples: 3
    judge_cascade: [cheap, strong]
    params:
      nodes:
        - id: grounded
          kind: binary
          criteria: Are the claims supported by the context?
          params: [actual_output, context]
          verdicts:
            "true": {score: 10}
            "false": {score: 0}
`
	binary := judgetest.ContainsMessage("Are the claims supported")
	cheap := judgetest.New(t)
	// Sure of "grounded"; of "ungrounded", two walks of three say true.
	cheap.On(judgetest.All(binary, judgetest.ContainsMessage("a year")), judgetest.Sequence(
		judgetest.Reply{Content: `{"reason": "Maybe.", "verdict": true}`},
		judgetest.Reply{Content: `{"reason": "No.", "verdict": false}`},
		judgetest.Reply{Content: `{"reason": "Maybe.", "verdict": true}`}))
	cheap.On(binary, judgetest.Reply{Content: `{"reason": "Matches.", "verdict": true}`})
	strong := judgetest.New(t)
	strong.On(binary, judgetest.Reply{Content: `{"reason": "Context says 30 days.", "verdict": false}`})

	e := newEnv(t, cascadeConfig(cheap.URL(), strong.URL(), dag))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": dagCases})
	s := e.run(t, "off", engine.RunOptions{})
	res := readResults(t, e.out)
	g, u := res["grounded"].Metrics[0], res["ungrounded"].Metrics[0]
	if g.DecidedBy != "cheap" || g.PPass == nil || *g.PPass != 1 || g.PPassFrom != engine.PPassSamples || *g.Score != 1 {
		t.Errorf("grounded: decided_by %q p_pass %v from %q score %v; want cheap, 1 from samples, 1", g.DecidedBy, g.PPass, g.PPassFrom, g.Score)
	}
	if u.DecidedBy != "strong" || u.PPass == nil || !near(*u.PPass, 2.0/3) || *u.Score != 0 || u.Status != results.StatusFailed ||
		u.EscalatedBecause != "P(pass) 0.6667 from cheap (samples) is inside [0.15, 0.85]" {
		t.Errorf("ungrounded: decided_by %q p_pass %v score %v %s because %q; want strong, 2/3, 0 failed", u.DecidedBy, u.PPass, u.Score, u.Status, u.EscalatedBecause)
	}
	if cheap.Calls() != 6 || strong.Calls() != 3 || u.Usage.Calls != 6 {
		t.Errorf("calls: cheap %d strong %d, ungrounded %d; want 6, 3 (three walks of ungrounded) and 6", cheap.Calls(), strong.Calls(), u.Usage.Calls)
	}
	if cs := s.Metrics[0].Cascade; cs == nil || cs.Escalated != 1 || cs.Cases != 2 {
		t.Errorf("summary cascade %+v; want 1 of 2 escalated", cs)
	}
}

// Adaptive samples stop at min on a judge that always gives the same
// score (a zero-width interval) and run to max on one whose scores keep
// the interval wide; each result says how many it took, the summary
// their spread.
func TestAdaptiveSamples(t *testing.T) {
	const metric = `  - name: correctness
    kind: geval
    threshold: 0.5
    samples: {max: 5, min: 2, stop_at_ci_width: 0.1}
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare.", "Check.", "Penalise."]}`})
	// c2 (Sydney) alternates between 2 and 9: its interval stays wide.
	srv.On(judgetest.ContainsMessage("Sydney"), judgetest.Sequence(
		judgetest.JSONScoreReply("Wrong.", "2", map[string]float64{"2": 1}),
		judgetest.JSONScoreReply("Right.", "9", map[string]float64{"9": 1})))
	srv.SetDefault(judgetest.JSONScoreReply("Right.", "8", map[string]float64{"8": .7, "7": .2, "9": .1}))
	e := newEnv(t, configFor(srv.URL(), true, metric))
	s := e.run(t, "off", engine.RunOptions{})
	res := readResults(t, e.out)
	c1, c2 := res["c1"].Metrics[0], res["c2"].Metrics[0]
	if c1.SamplesTaken != 2 || c1.Spread == nil || len(c1.Spread.Scores) != 2 || c1.Spread.CIWidth == nil || *c1.Spread.CIWidth != 0 {
		t.Errorf("c1: samples_taken %d spread %+v; want 2 with a zero-width interval", c1.SamplesTaken, c1.Spread)
	}
	if c2.SamplesTaken != 5 || c2.Spread == nil || len(c2.Spread.Scores) != 5 || c2.Spread.CIWidth == nil || *c2.Spread.CIWidth <= 0.1 {
		t.Errorf("c2: samples_taken %d spread %+v; want 5 (max) with an interval wider than 0.1", c2.SamplesTaken, c2.Spread)
	}
	scoring := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastMessage(), "Sydney") {
			scoring++
		}
	}
	if scoring != 5 {
		t.Errorf("c2 was scored %d times; want 5", scoring)
	}
	a := s.Metrics[0].AdaptiveSamples
	if a == nil || a.Cases != 3 || a.Min != 2 || a.Max != 5 || a.Total != 9 || a.Mean != 3 {
		t.Errorf("summary adaptive samples %+v; want 3 cases, 2..5, 9 in all, mean 3", a)
	}
}
