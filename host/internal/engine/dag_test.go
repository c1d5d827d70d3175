package engine_test

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/judgetest"
)

const dagCases = `{"id": "grounded", "input": "q", "actual_output": "The refund window is 30 days.", "context": ["Refunds within 30 days."]}
{"id": "ungrounded", "input": "q", "actual_output": "Refunds are accepted for a year.", "context": ["Refunds within 30 days."]}
`

// task → binary → choice, where the choice node is shared: it reads the
// task's output (data edge) and runs only when the binary says true
// (control edge).
const sharedNodeDAG = `  - name: claims_dag
    kind: dag
    threshold: 0.5
    params:
      aggregate: mean
      nodes:
        - id: extract
          kind: task
          instructions: List every claim the answer makes.
          output_label: Claims
          params: [actual_output]
          children: [grounded, tone]
        - id: grounded
          kind: binary
          criteria: Are the claims supported by the context?
          params: [context]
          verdicts:
            "true": {then: tone}
            "false": {score: 1}
        - id: tone
          kind: choice
          criteria: What is the register of the claims?
          verdicts:
            formal: {score: 10}
            casual: {score: 6}
`

func TestDAGTaskBinaryChoiceWithSharedNode(t *testing.T) {
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage("List every claim"), judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "a year") {
			return judgetest.Reply{Content: `{"output": "C1: refunds accepted for a year"}`}
		}
		return judgetest.Reply{Content: `{"output": "C1: refund window is 30 days"}`}
	}))
	binary := judgetest.ContainsMessage("Are the claims supported")
	srv.On(judgetest.All(binary, judgetest.ContainsMessage("a year")), judgetest.Reply{Content: `{"reason": "Context says 30 days.", "verdict": false}`})
	srv.On(binary, judgetest.Reply{Content: `{"reason": "Matches the context.", "verdict": true}`})
	srv.On(judgetest.ContainsMessage("What is the register"), judgetest.Reply{Content: `{"reason": "Neutral, precise.", "verdict": "formal"}`})

	e := newEnv(t, configFor(srv.URL(), true, sharedNodeDAG))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": dagCases})
	s := e.run(t, "off", engine.RunOptions{})

	res := readResults(t, e.out)
	g := res["grounded"].Metrics[0]
	u := res["ungrounded"].Metrics[0]
	if g.Score == nil || *g.Score != 1 || g.Usage.Calls != 3 {
		t.Fatalf("grounded: score %v calls %d (%s), want 1.0 with 3 calls", g.Score, g.Usage.Calls, g.Reason)
	}
	if u.Score == nil || *u.Score != 0.1 || u.Usage.Calls != 2 {
		t.Fatalf("ungrounded: score %v calls %d (%s), want 0.1 with 2 calls (choice never asked)", u.Score, u.Usage.Calls, u.Reason)
	}
	if srv.Calls() != 5 {
		t.Fatalf("%d judge calls, want 5", srv.Calls())
	}
	if s.Metrics[0].Passed != 1 || s.Metrics[0].Failed != 1 {
		t.Fatalf("summary = %+v", s.Metrics[0])
	}
	// The choice prompt holds the task's output under its label, and its
	// verdicts are enforced by a schema enum.
	var sawChoice bool
	for _, r := range srv.Requests() {
		// The node's criteria are in the system message (static-first),
		// the input — the task's output — in the last one.
		last := r.Messages[len(r.Messages)-1].Content
		if !strings.Contains(r.Messages[0].Content, "What is the register") {
			continue
		}
		sawChoice = true
		if !strings.Contains(last, "Claims:\nC1: refund window is 30 days") {
			t.Errorf("choice prompt lacks the task output under its label:\n%s", last)
		}
		if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil ||
			!strings.Contains(string(r.ResponseFormat.JSONSchema.Schema), `"enum":["casual","formal"]`) {
			t.Errorf("choice request has no verdict enum: %s", r.Body)
		}
	}
	if !sawChoice {
		t.Fatal("no choice request")
	}
}

func TestDAGValidationErrorNamesFileLineAndNode(t *testing.T) {
	bad := strings.Replace(sharedNodeDAG, `"false": {score: 1}`, `"false": {score: 11}`, 1)
	e := newEnv(t, configFor("http://127.0.0.1:1/v1", true, bad))
	err := loadErr(t, e)
	if err == nil || !strings.Contains(err.Error(), "anvil.yaml:") || !strings.Contains(err.Error(), "grounded") || !strings.Contains(err.Error(), "11") {
		t.Fatalf("error = %v, want file:line naming node grounded and score 11", err)
	}
}

func TestDAGProseReasonIsOneExtraCall(t *testing.T) {
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage("List every claim"), judgetest.Reply{Content: `{"output": "C1"}`})
	srv.On(judgetest.ContainsMessage("Are the claims supported"), judgetest.Reply{Content: `{"reason": "No.", "verdict": false}`})
	srv.On(judgetest.ContainsMessage("Decision path"), judgetest.Reply{Content: `{"reason": "The claims contradict the context."}`})
	cfg := strings.Replace(sharedNodeDAG, "aggregate: mean", "aggregate: mean\n      reason: judge", 1)
	e := newEnv(t, configFor(srv.URL(), true, cfg))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": dagCases})
	e.run(t, "off", engine.RunOptions{Limit: 1})
	r := readResults(t, e.out)["grounded"].Metrics[0]
	if r.Usage.Calls != 3 || !strings.HasPrefix(r.Reason, "The claims contradict the context.") || !strings.Contains(r.Reason, "grounded=false") {
		t.Fatalf("calls %d reason %q, want 3 calls (task, binary, reason) and the judge's prose with the path", r.Usage.Calls, r.Reason)
	}
	if *r.Score != 0.1 {
		t.Fatalf("score %v, want 0.1: the prose call never changes the score", *r.Score)
	}
}
