//go:build !wasip1

// The end-to-end tests link the host (SQLite included), which does not
// build for wasip1, where scripts/test vets this package's guest code.

package agent_test

import (
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/plugins/internal/hosted"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// TestKindsEndToEnd runs both kinds through the host against the fake
// judge server over the OpenAI wire.
func TestKindsEndToEnd(t *testing.T) {
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage("whether its arguments correctly and relevantly address"), hosted.Reply(scripted.Verdicts("yes", "no:people is 4.", "no:Weather is not asked.")))
	srv.On(judgetest.ContainsMessage(`"score": how far the outcome achieves the task`), hosted.Reply(map[string]any{"task": "Book a table for two.", "outcome": "A table for four was booked.", "score": 0.4, "reason": "Wrong party size."}))
	res := hosted.Evaluate(t, srv, `  - {name: args, kind: argument_correctness, threshold: 0.5}
  - {name: done, kind: task_completion, threshold: 0.5}
`, agentCase)
	want := map[string]float64{"args": 1.0 / 3, "done": 0.4}
	for _, m := range res.Cases[0].Metrics {
		if m.Score == nil || *m.Score != want[m.Metric] || m.Status != "failed" || m.Usage.Calls != 1 {
			t.Errorf("%s: score %v status %s calls %d error %v", m.Metric, m.Score, m.Status, m.Usage.Calls, m.Error)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}
