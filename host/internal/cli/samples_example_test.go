package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// samplesJudge scripts examples/samples: per case, the strict judge
// (gpt-4o-mini) answers each distinct request's repeats with the case's
// three scores in turn, the lenient judge (gpt-4.1-mini) always with one,
// and the graph's binary question with the case's three verdicts in turn.
func samplesJudge(s *judgetest.Server) {
	scripted := []struct {
		answer   string
		strict   []string
		lenient  string
		verdicts []bool
	}{
		{"within 30 days of delivery", []string{"9", "8", "9"}, "9", []bool{true, true, true}},
		{"free on some orders", []string{"7", "4", "6"}, "8", []bool{true, false, false}},
		{"Sydney is the capital", []string{"2", "3", "1"}, "6", []bool{false, false, false}},
		{"Forgot password", []string{"8", "9", "8"}, "9", []bool{true, true, true}},
		{"during business hours", []string{"6", "4", "5"}, "7", []bool{true, false, true}},
	}
	// The graph's question first: its requests hold the answer too.
	for _, c := range scripted {
		var replies []judgetest.Reply
		for _, v := range c.verdicts {
			replies = append(replies, judgetest.Reply{Content: fmt.Sprintf(`{"reason": "Verdict %v.", "verdict": %v}`, v, v)})
		}
		s.On(judgetest.All(judgetest.ContainsMessage("state the fact the expected output gives"), judgetest.ContainsMessage(c.answer)), judgetest.PerRequest(replies...))
	}
	for _, c := range scripted {
		var replies []judgetest.Reply
		for _, v := range c.strict {
			replies = append(replies, judgetest.JSONScoreReply("Scored "+v+".", v, nil))
		}
		s.On(judgetest.All(judgetest.Model("gpt-4o-mini"), judgetest.ContainsMessage(c.answer)), judgetest.PerRequest(replies...))
		s.On(judgetest.All(judgetest.Model("gpt-4.1-mini"), judgetest.ContainsMessage(c.answer)), judgetest.JSONScoreReply("Scored "+c.lenient+".", c.lenient, nil))
	}
}

// TestSamplesExample runs README's samples command as a new user would,
// with no judge key: the recorded session answers both judges, each case
// of correctness has its three samples, the table gives the intervals,
// the flips and the panel's agreement, and the wrong answer fails the gate
// (exit 1). Re-record with
//
//	go test ./host/internal/cli -run TestSamplesExample -update-recording
func TestSamplesExample(t *testing.T) {
	dir := copyExample(t, "samples")
	// 5 cases × 3 samples of correctness, 5 × 2 judges of the panel,
	// 5 × 3 walks of the graph's one question.
	recordExample(t, dir, "samples", samplesJudge, exitThreshold, 40)

	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("offline samples example: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"REPLAYED from judge-session.jsonl",
		"correctness: mean 0.593 [",
		"pass rate 80.0% [37.5%, 96.4%]",
		"flips 2 of 5 sampled cases 40.0% [11.8%, 76.9%]",
		"correctness_panel: mean 0.710 [",
		"panel strict, lenient (mean): mean |diff| 0.140, verdicts agree on 80.0% of 5 cases",
		"states_fact_dag: mean 0.600 [",
		"path differs on 2 of 5 sampled cases (verdict split: states_fact 2)",
		"failing correctness: capital-au\n",
		"FAILED",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	// README shows the table's quality lines as this run prints them.
	for _, line := range readmeSamplesOutput(t) {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("README shows %q; the run prints:\n%s", line, r.stdout)
		}
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	c := metricOf(t, s, "correctness")
	if c.Sampled != 5 || *c.FlipShare != 0.4 || c.Failed != 1 || s.Judge.Calls != 0 {
		t.Errorf("correctness: sampled %d, flip share %v, failed %d, calls %d; want 5, 0.4, 1, 0", c.Sampled, *c.FlipShare, c.Failed, s.Judge.Calls)
	}
	for _, l := range resultLines(t, filepath.Join(dir, "out", "results.jsonl")) {
		m := l.Metrics[0]
		if m.Spread == nil || len(m.Spread.Scores) != 3 {
			t.Errorf("%s: spread %+v; want 3 samples", l.CaseID, m.Spread)
		}
		if l.CaseID == "shipping" && (!m.Spread.Flipped || math.Abs(m.Spread.Mean-17.0/30) > 1e-9) {
			t.Errorf("shipping: spread %+v; want samples .7 .4 .6 flipping, mean .5667", m.Spread)
		}
		if p := l.Metrics[1]; len(p.Panel) != 2 || p.Aggregate != "mean" {
			t.Errorf("%s panel: %+v", l.CaseID, p.Panel)
		}
		if l.CaseID == "shipping" {
			ds := l.Metrics[2].DAGSpread
			if ds == nil || ds.Scorings != 3 || !ds.PathDiffers || fmt.Sprint(ds.Nodes) != "[{states_fact 3 0 [{false 2} {true 1}] true}]" {
				t.Errorf("shipping states_fact_dag: dag_spread %+v; want states_fact true once, false twice", ds)
			}
		}
	}
	if d := metricOf(t, s, "states_fact_dag").DAGSamples; d == nil || d.Cases != 5 || d.PathDiffers != 2 ||
		fmt.Sprint(d.Nodes) != "[{states_fact 5 2 [{false 6} {true 9}]}]" {
		t.Errorf("states_fact_dag: dag_samples %+v; want 2 of 5 cases split, false 6, true 9", d)
	}
	// report.html writes the split under the node.
	if page := string(mustRead(t, filepath.Join(dir, "out", "report.html"))); !strings.Contains(page, `<text class="dag-note"`) ||
		!strings.Contains(page, "false 2/3 · true 1/3") {
		t.Error("report.html does not write the walks' split under the graph's node")
	}

	// validate names the samples and the panel.
	v := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--json")
	var vr struct {
		Metrics []struct {
			Name      string   `json:"name"`
			Judges    []string `json:"judges"`
			Aggregate string   `json:"aggregate"`
			Samples   int      `json:"samples"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(v.stdout), &vr); err != nil || v.code != exitOK || len(vr.Metrics) != 3 ||
		vr.Metrics[0].Samples != 3 || vr.Metrics[2].Samples != 3 || vr.Metrics[1].Aggregate != "mean" || strings.Join(vr.Metrics[1].Judges, ",") != "strict,lenient" {
		t.Errorf("validate --json: exit %d, %+v (%v)\n%s", v.code, vr, err, v.stdout)
	}

	// estimate prices the samples and the panel: every one of the 25
	// scorings is in the recording, so free.
	e := runBinary(t, dir, nil, "estimate", "-c", "anvil.yaml")
	if e.code != exitOK || !strings.Contains(e.stdout, "3 samples: every case is scored 3 times") ||
		!strings.Contains(e.stdout, "panel of 2 judges (mean): every case is scored 2 times") {
		t.Errorf("estimate: exit %d\n%s\n%s", e.code, e.stdout, e.stderr)
	}
}

// readmeSamplesOutput returns the lines of the output block README shows
// after the samples example's command.
func readmeSamplesOutput(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "bin/anvil-host run -c examples/samples/anvil.yaml ")
	if !ok {
		t.Fatal("README lacks the samples example's command")
	}
	_, block, ok := strings.Cut(after, "\n```\n\n```\n")
	if !ok {
		t.Fatal("README shows no output after the samples example's command")
	}
	block, _, _ = strings.Cut(block, "\n```")
	lines := strings.Split(block, "\n")
	if len(lines) < 3 {
		t.Fatalf("README's samples output block has %d lines", len(lines))
	}
	return lines
}
