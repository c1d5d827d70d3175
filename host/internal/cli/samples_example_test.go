package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// samplesJudge scripts examples/samples: per case, the strict judge
// (gpt-4o-mini) answers each distinct request's repeats with the case's
// three scores in turn, the lenient judge (gpt-4.1-mini) always with one.
func samplesJudge(s *judgetest.Server) {
	scripted := []struct {
		answer  string
		strict  []string
		lenient string
	}{
		{"within 30 days of delivery", []string{"9", "8", "9"}, "9"},
		{"free on some orders", []string{"7", "4", "6"}, "8"},
		{"Sydney is the capital", []string{"2", "3", "1"}, "6"},
		{"Forgot password", []string{"8", "9", "8"}, "9"},
		{"during business hours", []string{"6", "4", "5"}, "7"},
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
	if *updateRecording {
		srv := judgetest.New(t)
		samplesJudge(srv)
		store := filepath.Join(dir, "record.db")
		if r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--store", store, "-o", "rec", "--no-progress"); r.code != exitThreshold {
			t.Fatalf("recording: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		// 5 cases × 3 samples of correctness, 5 × 2 judges of the panel.
		if srv.Calls() != 25 {
			t.Fatalf("recording made %d judge calls; want 25", srv.Calls())
		}
		dst, _ := filepath.Abs("../../../examples/samples/judge-session.jsonl")
		if r := runBinary(t, dir, nil, "cache", "export", "--store", store, "--note", recordingNote, "-o", dst); r.code != exitOK {
			t.Fatalf("export: %s", r.stderr)
		}
		if err := os.WriteFile(filepath.Join(dir, "judge-session.jsonl"), mustRead(t, dst), 0o644); err != nil {
			t.Fatal(err)
		}
	}

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
		"failing correctness: capital-au\n",
		"FAILED",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
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
	if err := json.Unmarshal([]byte(v.stdout), &vr); err != nil || v.code != exitOK || len(vr.Metrics) != 2 ||
		vr.Metrics[0].Samples != 3 || vr.Metrics[1].Aggregate != "mean" || strings.Join(vr.Metrics[1].Judges, ",") != "strict,lenient" {
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
