package cli

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/calibrate"
	"github.com/agentanvil/anvil/host/judgetest"
)

const calibrateRecordingNote = "recorded against Anvil's own fake judge server (scripted replies, not a model)"

// calibrateScores are the scripted judge's scores (0–10) for
// examples/calibrate, per case: correctness, helpfulness. It over-credits
// price-match's vague answer (7: a pass the raters fail).
var calibrateScores = map[string][2]int{
	"refund-window": {9, 8}, "reset-password": {8, 7}, "shipping-abroad": {2, 3}, "cancel-order": {7, 8},
	"warranty-length": {3, 2}, "gift-wrap": {6, 6}, "store-hours": {9, 9}, "price-match": {7, 5},
	"track-parcel": {5, 4}, "student-discount": {8, 7}, "payment-methods": {1, 2}, "size-exchange": {7, 6},
}

// calibrateJudge scripts the fake judge: score s with the alternatives s
// 70%, s−1 20%, s+1 10%, so that the weighted score is s − 0.1.
func calibrateJudge(t *testing.T, s *judgetest.Server) {
	t.Helper()
	f, err := os.Open("../../../examples/calibrate/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c struct {
			ID           string `json:"id"`
			ActualOutput string `json:"actual_output"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		scores, ok := calibrateScores[c.ID]
		if !ok {
			t.Fatalf("no scripted score for case %s", c.ID)
		}
		for i, step := range []string{"Identify the fact the expected output gives.", "Decide what the customer needs to do or know."} {
			v := scores[i]
			alts := map[string]float64{strconv.Itoa(v): .7, strconv.Itoa(v - 1): .2, strconv.Itoa(v + 1): .1}
			s.On(judgetest.All(judgetest.ContainsMessage(c.ActualOutput), judgetest.ContainsMessage(step)),
				judgetest.JSONScoreReply("scripted", strconv.Itoa(v), alts))
		}
	}
	s.SetDefault(judgetest.PlainText(400, "calibrate example: no scripted reply for this request"))
}

// calibrateExample copies examples/calibrate into a temp dir.
func calibrateExample(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for _, name := range []string{"anvil.yaml", "cases.jsonl", "labels.jsonl", "judge-session.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../../examples/calibrate", name))
		if os.IsNotExist(err) && name == "judge-session.jsonl" && *updateRecording {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// recordCalibrateExample re-records examples/calibrate/judge-session.jsonl
// (go test ./host/internal/cli -run TestCalibrateExample -update-recording).
func recordCalibrateExample(t *testing.T) {
	dir := calibrateExample(t)
	srv := judgetest.New(t)
	calibrateJudge(t, srv)
	store := filepath.Join(dir, "record.db")
	if r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--store", store, "-o", "rec", "--no-progress"); r.code != exitOK && r.code != exitThreshold {
		t.Fatalf("recording: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dst, err := filepath.Abs("../../../examples/calibrate/judge-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, dir, nil, "cache", "export", "--store", store, "--note", calibrateRecordingNote, "-o", dst); r.code != exitOK {
		t.Fatalf("cache export: exit %d\n%s", r.code, r.stderr)
	}
}

// TestCalibrateExample runs README's calibrate command on the bundled
// example, offline (the recorded judge answers), and checks the agreement
// against values computed independently (testdata/calibrate_expected.py).
func TestCalibrateExample(t *testing.T) {
	if *updateRecording {
		recordCalibrateExample(t)
	}
	dir := calibrateExample(t)
	r := runBinary(t, dir, nil, "calibrate", "-c", "anvil.yaml", "--labels", "labels.jsonl", "-o", "runs/calibrate")
	if r.code != exitOK {
		t.Fatalf("calibrate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"correctness: 24 labels by 2 rater(s) on 12 cases; 12 paired", "Spearman ρ", "+0.952", "Cohen κ (pass/fail)", "helpfulness", "one rater"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "REPLAYED from judge-session.jsonl") || !strings.Contains(r.stderr, calibrateRecordingNote) {
		t.Errorf("stderr does not say the judge was replayed:\n%s", r.stderr)
	}
	out := filepath.Join(dir, "runs", "calibrate")
	rep, err := calibrate.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, filepath.Join(out, "summary.json"))
	if s.Judge.Calls != 0 || len(s.Judges) != 1 || s.Judges[0].Source != "recording" {
		t.Fatalf("the example called a judge: %+v %+v", s.Judge, s.Judges)
	}
	want := map[string]map[string]float64{
		"correctness": {
			calibrate.Spearman:            0.9517009861427536,
			calibrate.Kendall:             0.8925924666248365,
			calibrate.Pearson:             0.9474729115034302,
			calibrate.CohenKappa:          0.8135593220338982,
			calibrate.AlphaRatersInterval: 0.7976539589442815,
			calibrate.AlphaRatersNominal:  0.8391608391608392,
			calibrate.AlphaJudgeNominal:   0.78125,
		},
		"helpfulness": {
			calibrate.Spearman: 0.9784921095801634,
			calibrate.Kendall:  0.9418581497197698,
			calibrate.Pearson:  0.9806066509939192,
		},
	}
	if len(rep.Metrics) != 2 {
		t.Fatalf("calibration.json has %d metrics, want 2", len(rep.Metrics))
	}
	for _, m := range rep.Metrics {
		for name, v := range want[m.Metric] {
			ci, ok := m.Agreement[name]
			// The judge's scores pass through results.jsonl as JSON
			// numbers; 1e-9 is far below any rounding that matters.
			if !ok || math.Abs(ci.Estimate-v) > 1e-9 || !(ci.Low <= ci.Estimate && ci.Estimate <= ci.High) {
				t.Errorf("%s %s = %+v (defined %v; %s), want %v", m.Metric, name, ci, ok, m.Undefined[name], v)
			}
		}
		if len(m.Agreement) != len(want[m.Metric]) {
			t.Errorf("%s: %d statistics, want %d (undefined: %v)", m.Metric, len(m.Agreement), len(want[m.Metric]), m.Undefined)
		}
	}

	// The same, from the run's results, as JSON; the same seed gives the
	// same intervals.
	r = runBinary(t, dir, nil, "calibrate", "-c", "anvil.yaml", "--labels", "labels.jsonl", "--results", "runs/calibrate", "--json")
	if r.code != exitOK {
		t.Fatalf("calibrate --results: exit %d\n%s", r.code, r.stderr)
	}
	var again calibrate.Report
	if err := json.Unmarshal([]byte(r.stdout), &again); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if again.Metrics[0].Agreement[calibrate.Spearman] != rep.Metrics[0].Agreement[calibrate.Spearman] {
		t.Errorf("--results gave %+v, the run gave %+v", again.Metrics[0].Agreement[calibrate.Spearman], rep.Metrics[0].Agreement[calibrate.Spearman])
	}

	// A new run into the directory removes the now stale calibration.json.
	if r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "runs/calibrate", "--no-progress"); r.code != exitOK && r.code != exitThreshold {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, calibrate.FileName)); !os.IsNotExist(err) {
		t.Errorf("a new run left the earlier calibration.json: %v", err)
	}
}

func TestCalibrateBadInput(t *testing.T) {
	dir := calibrateExample(t)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.jsonl", `{"case_id": "refund-window", "metric": "correctness", "score": "five"}`+"\n")
	write("unknown.jsonl", `{"case_id": "refund-window", "metric": "corectness", "score": 5}`+"\n"+`{"case_id": "no-such-case", "metric": "correctness", "score": 5}`+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no labels flag", []string{"calibrate", "-c", "anvil.yaml"}, []string{"--labels is required"}},
		{"bad field", []string{"calibrate", "-c", "anvil.yaml", "--labels", "bad.jsonl"}, []string{`bad.jsonl:1: field "score": want a number, got "five"`}},
		{"unknown metric and case", []string{"calibrate", "-c", "anvil.yaml", "--labels", "unknown.jsonl"}, []string{
			`unknown.jsonl:1: field "metric": unknown metric "corectness" (the config has correctness, helpfulness)`,
			`unknown.jsonl:2: field "case_id": unknown case "no-such-case" (not in `,
		}},
		{"missing labels file", []string{"calibrate", "-c", "anvil.yaml", "--labels", "nope.jsonl"}, []string{"nope.jsonl"}},
		{"results that are no run", []string{"calibrate", "-c", "anvil.yaml", "--labels", "labels.jsonl", "--results", "nowhere"}, []string{"nowhere"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, dir, nil, tc.args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitUsage, r.stdout, r.stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
	// Nothing was evaluated: no output directory appeared.
	if _, err := os.Stat(filepath.Join(dir, "anvil-results")); !os.IsNotExist(err) {
		t.Errorf("a rejected calibrate evaluated something: %v", err)
	}
}

// TestReadmeShowsTestedCommands holds README's calibrate and compare
// commands to the ones TestCalibrateExample and TestCompareQuickstart run
// (there in a copy of the example's directory, here from the repository's
// root).
func TestReadmeShowsTestedCommands(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"bin/anvil-host calibrate -c examples/calibrate/anvil.yaml --labels examples/calibrate/labels.jsonl -o runs/calibrate\n",
		"bin/anvil-host run -c examples/quickstart/anvil.yaml -o runs/good\n",
		"bin/anvil-host run -c examples/quickstart/anvil.yaml --input examples/quickstart/cases-regressed.jsonl -o runs/regressed\n",
		"bin/anvil-host compare --report runs/good runs/regressed",
		"bin/anvil-host run -c examples/samples/anvil.yaml ",
	} {
		if !strings.Contains(string(b), cmd) {
			t.Errorf("README lacks the tested command %q", strings.TrimSpace(cmd))
		}
	}
}
