package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// agentJudge scripts examples/agent: per case (told apart by a phrase of
// its input) and per kind, the answers a careful judge would give.
func agentJudge(s *judgetest.Server) {
	task := func(goal, outcome string, score float64, reason string) judgetest.Reply {
		return jsonReply(map[string]any{"task": goal, "outcome": outcome, "score": score, "reason": reason})
	}
	const (
		args = "whether its arguments correctly and relevantly address"
		done = `"score": how far the outcome achieves the task`
	)
	for _, c := range []struct {
		marker, kind string
		reply        judgetest.Reply
	}{
		{"Lyon", args, verdictsReply("yes", "yes")},
		{"Lyon", done, task("Book a table for two in Lyon on Friday at 8pm.", "A table for two at Café Bleu in Lyon was confirmed for Friday at 20:00.", 1, "Booked as asked.")},
		{"4411", args, verdictsReply("no:order_id is 4141; the user asked about 4411.", "no:order_id is 4141; the user asked about 4411.")},
		{"4411", done, task("Get a refund for order 4411, which arrived broken.", "A refund was opened for order 4141, another order.", 0.1, "The refund is for the wrong order; 4411 is untouched.")},
		{"Oslo", args, verdictsReply("yes", "no:News about Oslo does not tell whether it will rain.")},
		{"Oslo", done, task("Know whether it will rain in Oslo tomorrow.", "The forecast gives an 80% chance of rain in Oslo tomorrow, and the user was told.", 0.9, "Answered from the forecast.")},
	} {
		s.On(judgetest.All(judgetest.ContainsMessage(c.kind), judgetest.ContainsMessage(c.marker)), c.reply)
	}
}

// TestAgentExample runs examples/agent with no judge key: the recorded
// session answers both kinds' one call per case, and the refund on the
// wrong order fails the gate (exit 1). Re-record with
//
//	go test ./host/internal/cli -run TestAgentExample -update-recording
func TestAgentExample(t *testing.T) {
	dir := copyExample(t, "agent")
	recordExample(t, dir, "agent", agentJudge, exitThreshold, 6)

	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("offline agent example: exit %d, want 1 (re-record with -update-recording if prompts changed)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"REPLAYED from judge-session.jsonl", "failing argument_correctness: refund", "failing task_completion: refund"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, r.stdout)
		}
	}
	want := map[string]map[string]float64{
		"booking": {"argument_correctness": 1, "task_completion": 1},
		"refund":  {"argument_correctness": 0, "task_completion": 0.1},
		"weather": {"argument_correctness": 0.5, "task_completion": 0.9},
	}
	wantScores(t, filepath.Join(dir, "out"), want)
}
