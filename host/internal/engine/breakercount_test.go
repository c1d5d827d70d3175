package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// stepsGiven is a G-Eval metric that needs no once-per-run steps call, so
// every judge request is a case's.
const stepsGiven = `  - name: correctness
    kind: geval
    threshold: 0.5
    params:
      evaluation_steps: [Compare with the expected output.]
      evaluation_params: [input, actual_output, expected_output]
`

// The cases whose 401s open the breaker stop the run before they are
// written; the summary still counts what the server received.
func TestStoppedRunCountsTheRequestsThatStoppedIt(t *testing.T) {
	srv := judgetest.New(t)
	srv.SetDefault(judgetest.Reply{Status: 401, ErrorMessage: "bad key"})
	e := newEnv(t, configFor(srv.URL(), true, stepsGiven))
	s, err := e.runErr(t, context.Background(), "off", engine.RunOptions{})
	if err == nil || s == nil || s.Incomplete == nil {
		t.Fatalf("err %v, summary %+v; want a run stopped by the open breaker", err, s)
	}
	got := srv.Calls()
	if got < 3 {
		t.Fatalf("server received %d requests; want the breaker's 3", got)
	}
	if s.Judge.Attempts != got || s.Judge.Calls != got || s.Judge.Requests < got {
		t.Errorf("summary judge %+v; want %d attempts and calls, at least %d requests (what the server received)", s.Judge, got, got)
	}
	// summary.json says which part of that the results do not hold.
	b, err := os.ReadFile(filepath.Join(e.out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var written struct {
		Incomplete struct {
			Unwritten *results.JudgeUsage `json:"unwritten_judge"`
		} `json:"incomplete"`
	}
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if u := written.Incomplete.Unwritten; u == nil || u.Attempts == 0 {
		t.Errorf("summary.json incomplete.unwritten_judge = %+v; want the unwritten cases' judge work", u)
	}
}
