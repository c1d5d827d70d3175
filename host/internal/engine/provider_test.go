package engine_test

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// A judge of another provider without its key is skipped naming its own
// key variable, with no OpenAI advice, and is not given OpenAI's base URL
// or model.
func TestProviderJudgeWithoutKey(t *testing.T) {
	cfg := `version: 1
dataset: cases.jsonl
judges:
  default: {provider: anthropic, model: claude-sonnet-4-5}
metrics:
` + correctness
	e := newEnv(t, cfg)
	s := e.run(t, "off", engine.RunOptions{})
	if m := s.Metrics[0]; m.Skipped != 4 || m.Judge.Calls != 0 {
		t.Fatalf("summary = %+v, want every case skipped", m)
	}
	r := readResults(t, e.out)["c1"].Metrics[0]
	if !strings.Contains(r.Reason, "$ANTHROPIC_API_KEY (set it)") || strings.Contains(r.Reason, "OPENAI") {
		t.Fatalf("reason %q", r.Reason)
	}
}
