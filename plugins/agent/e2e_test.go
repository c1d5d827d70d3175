//go:build !wasip1

// The end-to-end tests link the host (SQLite included), which does not
// build for wasip1, where scripts/test vets this package's guest code.

package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// TestKindsEndToEnd runs both kinds through the host against the fake
// judge server over the OpenAI wire.
func TestKindsEndToEnd(t *testing.T) {
	srv := judgetest.New(t)
	reply := func(v any) judgetest.Reply {
		b, _ := json.Marshal(v)
		return judgetest.Reply{Content: string(b)}
	}
	srv.On(judgetest.ContainsMessage("whether its arguments correctly and relevantly address"), reply(scripted.Verdicts("yes", "no:people is 4.", "no:Weather is not asked.")))
	srv.On(judgetest.ContainsMessage(`"score": how far the outcome achieves the task`), reply(map[string]any{"task": "Book a table for two.", "outcome": "A table for four was booked.", "score": 0.4, "reason": "Wrong party size."}))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "anvil.yaml")
	os.WriteFile(cfgPath, []byte(`version: 1
judges:
  default: {base_url: "`+srv.URL()+`", model: m, api_key_env: E2E_KEY, supports_json_schema: true}
metrics:
  - {name: args, kind: argument_correctness, threshold: 0.5}
  - {name: done, kind: task_completion, threshold: 0.5}
`), 0o644)
	cfg, err := host.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := host.Evaluate(ctx, cfg, []abi.TestCase{agentCase}, host.Options{Cache: "off", Getenv: func(k string) string { return map[string]string{"E2E_KEY": "k"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
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
