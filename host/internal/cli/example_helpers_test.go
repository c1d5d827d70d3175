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

// recordExample re-records examples/NAME/judge-session.jsonl (under
// -update-recording) from the example copied to dir: a run through a
// fake judge scripted by script must exit wantCode having made wantCalls
// judge calls, and its store is exported over the example's recording
// (and the copy's, which the offline run then replays).
func recordExample(t *testing.T, dir, name string, script func(*judgetest.Server), wantCode, wantCalls int) {
	t.Helper()
	if !*updateRecording {
		return
	}
	srv := judgetest.New(t)
	script(srv)
	store := filepath.Join(dir, "record.db")
	if r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--store", store, "-o", "rec", "--no-progress"); r.code != wantCode {
		t.Fatalf("recording: exit %d, want %d\n%s\n%s", r.code, wantCode, r.stdout, r.stderr)
	}
	if srv.Calls() != wantCalls {
		t.Fatalf("recording made %d judge calls; want %d", srv.Calls(), wantCalls)
	}
	dst, _ := filepath.Abs(filepath.Join("../../../examples", name, "judge-session.jsonl"))
	if r := runBinary(t, dir, nil, "cache", "export", "--store", store, "--note", recordingNote, "-o", dst); r.code != exitOK {
		t.Fatalf("export: %s", r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "judge-session.jsonl"), mustRead(t, dst), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantScores checks results.jsonl in out: one line per case of want, and
// each metric's score as want has it (by case id, then metric name).
func wantScores(t *testing.T, out string, want map[string]map[string]float64) {
	t.Helper()
	lines := resultLines(t, filepath.Join(out, "results.jsonl"))
	if len(lines) != len(want) {
		t.Fatalf("%d result lines, want %d", len(lines), len(want))
	}
	for _, l := range lines {
		for _, m := range l.Metrics {
			w, ok := want[l.CaseID][m.Metric]
			if !ok || m.Score == nil || math.Abs(*m.Score-w) > 1e-9 {
				t.Errorf("%s %s: score %v error %v, want %v", l.CaseID, m.Metric, m.Score, m.Error, w)
			}
		}
	}
}

// jsonReply is a judge reply whose content is v as JSON.
func jsonReply(v any) judgetest.Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return judgetest.Reply{Content: string(b)}
}

// verdictList is a list of {noun: text, verdict, reason} from
// "text|verdict:reason"; with noun "", of {verdict, reason} from
// "verdict:reason".
func verdictList(noun string, its ...string) []map[string]string {
	out := []map[string]string{}
	for _, it := range its {
		o := map[string]string{}
		if noun != "" {
			o[noun], it, _ = strings.Cut(it, "|")
		}
		o["verdict"], o["reason"], _ = strings.Cut(it, ":")
		out = append(out, o)
	}
	return out
}

// verdictsReply is {"verdicts": [...]} of "verdict:reason".
func verdictsReply(vs ...string) judgetest.Reply {
	return jsonReply(map[string]any{"verdicts": verdictList("", vs...)})
}
