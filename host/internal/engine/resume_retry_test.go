package engine_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
)

// TestResumeRedoesRetryableErrorsOnly: --resume evaluates again every case
// whose result holds an error marked retryable (a fault of the judge or of
// the infrastructure: a transport timeout, a lost worker) and keeps every
// other result, a guest's own timeout included; each case stays written
// once.
func TestResumeRedoesRetryableErrorsOnly(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	writeRetryable(t, e)

	s, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Resume == nil || s.Resume.Done != 2 || s.Resume.Retried != 2 || s.Cases != 4 {
		t.Fatalf("resume report %+v, cases %d; want 2 done, 2 retried, 4 cases", s.Resume, s.Cases)
	}
	after := readResults(t, e.out) // fails on a case written twice
	for id, want := range map[string]string{"c1": results.StatusPassed, "c2": results.StatusPassed, "c3": results.StatusError, "c4": results.StatusPassed} {
		if got := after[id].Metrics[0].Status; got != want {
			t.Errorf("%s after --resume: %s, want %s", id, got, want)
		}
	}
	if m := s.Metrics[0]; m.Passed != 3 || m.Errors != 1 {
		t.Errorf("summary: %d passed, %d errors; want 3 and 1", m.Passed, m.Errors)
	}
	// The retried cases' lines were replaced, not appended after stale ones.
	var order []string
	err = results.Each(filepath.Join(e.out, "results.jsonl"), func(r *results.CaseResult) error {
		order = append(order, r.CaseID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(order)
	if !slices.Equal(order, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("results.jsonl holds %v", order)
	}
}

// recordingDispatcher evaluates nothing: it notes what the engine told it
// of the resume and the cases fed, and hands back the result results
// holds for each.
type recordingDispatcher struct {
	resumed engine.Resumed
	fed     []string
	results map[string]results.CaseResult
}

func (d *recordingDispatcher) Dispatch(_ context.Context, resumed engine.Resumed, cases <-chan *abi.TestCase, emit func(*results.CaseResult) error) error {
	d.resumed = resumed
	for c := range cases {
		d.fed = append(d.fed, c.ID)
		r := d.results[c.ID]
		if err := emit(&r); err != nil {
			return err
		}
	}
	return nil
}

// TestResumeTellsTheDispatcher: a resumed run evaluated elsewhere (the
// cluster's coordinator) learns from the engine's one read of
// results.jsonl which cases are written and which are retried, and is
// fed exactly the retried ones; it reads the file no more itself.
func TestResumeTellsTheDispatcher(t *testing.T) {
	e := newEnv(t, liarMetric(`{score: 1, success: true}`, ""))
	written := writeRetryable(t, e)
	d := &recordingDispatcher{results: written}
	s, err := e.runErr(t, context.Background(), "off", engine.RunOptions{Resume: true, Dispatch: d})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
	if got := keys(d.resumed.Written); !slices.Equal(got, []string{"c1", "c3"}) {
		t.Errorf("dispatcher told written %v; want [c1 c3]", got)
	}
	if got := keys(d.resumed.Retried); !slices.Equal(got, []string{"c2", "c4"}) {
		t.Errorf("dispatcher told retried %v; want [c2 c4]", got)
	}
	if slices.Sort(d.fed); !slices.Equal(d.fed, []string{"c2", "c4"}) {
		t.Errorf("dispatcher fed %v; want [c2 c4]", d.fed)
	}
	if s.Cases != 4 {
		t.Errorf("summary counts %d cases; want 4", s.Cases)
	}
}

// writeRetryable runs e once, then rewrites its results.jsonl so that c2
// and c4 hold an error marked retryable and c3 a guest's own timeout; it
// returns the results of the first run by case.
func writeRetryable(t *testing.T, e env) map[string]results.CaseResult {
	t.Helper()
	if _, err := e.runErr(t, context.Background(), "off", engine.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	written := readResults(t, e.out)
	faults := map[string]*abi.Error{
		// A worker's case whose deadline passed while it waited on NATS.
		"c2": {Code: abi.CodeTimeout, Message: "measure: passed its 1m0s deadline; while it ran: NATS: nats: timeout", Retryable: true},
		// The guest's own deadline: its fault, not retried.
		"c3": {Code: abi.CodeTimeout, Message: "measure: passed its 1m0s deadline; instance discarded"},
		// A judge outage.
		"c4": {Code: abi.CodeJudge, Message: "judge returned 503 after 3 attempts", Retryable: true},
	}
	var lines []byte
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		r := written[id]
		if f := faults[id]; f != nil {
			m := &r.Metrics[0]
			m.Status, m.Score, m.Error, m.ErrorClass = results.StatusError, nil, f, "plugin"
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(e.out, "results.jsonl"), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	return written
}
