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

// conversationJudge scripts the judge for examples/conversation: the
// allergy-forgotten chat suggests a peanut butter bar, the off-role one
// answers "lol, figure it out yourself"; everything else goes well.
func conversationJudge(s *judgetest.Server) {
	verdict := func(v, reason string) judgetest.Reply {
		return judgetest.Reply{Content: `{"reason": "` + reason + `", "verdict": "` + v + `"}`}
	}
	peanut, rude := judgetest.ContainsMessage("peanut butter bar"), judgetest.ContainsMessage("lol, figure it out yourself")
	// conversational_geval: steps once, then a weighted score per case.
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{
		Content: `{"steps": ["Read the scenario.", "Check each assistant turn helps safely.", "Penalise rudeness and forgotten facts."]}`,
	})
	low := judgetest.JSONScoreReply("Unsafe or rude.", "2", map[string]float64{"2": .9, "3": .1})
	geval := judgetest.ContainsMessage("Score the test case")
	s.On(judgetest.All(geval, peanut), low)
	s.On(judgetest.All(geval, rude), low)
	s.On(geval, judgetest.JSONScoreReply("Safe and helpful.", "8", map[string]float64{"8": .7, "7": .2, "9": .1}))
	// knowledge_retention
	facts := judgetest.ContainsMessage("Extract the facts")
	s.On(judgetest.All(facts, judgetest.ContainsMessage("<<<BEGIN USER MESSAGE>>>\nHi! I'm allergic to peanuts.")),
		judgetest.Reply{Content: `{"facts": {"Allergies": ["peanuts"]}}`})
	s.On(facts, judgetest.Reply{Content: `{"facts": {}}`})
	retention := judgetest.ContainsMessage("forgot or contradicts")
	s.On(judgetest.All(retention, peanut), verdict("yes", "Suggests peanut butter to a user allergic to peanuts."))
	s.On(retention, verdict("no", "Keeps the allergy in mind."))
	// role_adherence: the rude reply is turn 5.
	role := judgetest.ContainsMessage("breaks that role")
	s.On(judgetest.All(role, rude), judgetest.Reply{Content: `{"out_of_character": [{"turn": 5, "reason": "Mocks the customer instead of helping."}]}`})
	s.On(role, judgetest.Reply{Content: `{"out_of_character": []}`})
	// conversation_completeness
	s.On(judgetest.ContainsMessage("List what the USER wanted"), judgetest.Reply{Content: `{"intentions": ["The user wants a snack that is safe with a peanut allergy."]}`})
	met := judgetest.ContainsMessage("met the user's INTENTION")
	s.On(judgetest.All(met, peanut), verdict("no", "The suggested snack contains peanuts."))
	s.On(judgetest.All(met, rude), verdict("no", "No snack was suggested."))
	s.On(met, verdict("yes", "A peanut-free snack was suggested."))
	// turn_relevancy: only the window ending with the rude reply fails.
	relevant := judgetest.ContainsMessage("LAST assistant turn")
	s.On(judgetest.All(relevant, judgetest.ContainsMessage(`I'm on a break."}]`)), verdict("no", "Does not answer the request."))
	s.On(relevant, verdict("yes", "Answers the user."))
}

// TestConversationExample runs examples/conversation through the fake
// judge server, then offline from its recording: every conversational
// kind scores each chat as its script says, and report.html shows the
// chats as conversations.
func TestConversationExample(t *testing.T) {
	dir := copyExample(t, "conversation")
	srv := judgetest.New(t)
	conversationJudge(srv)
	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--no-progress", "--store", filepath.Join(dir, "record.db"))
	if r.code != exitThreshold {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if *updateRecording {
		dst, _ := filepath.Abs("../../../examples/conversation/judge-session.jsonl")
		if r := runBinary(t, dir, nil, "cache", "export", "--store", filepath.Join(dir, "record.db"), "--note", recordingNote, "-o", dst); r.code != 0 {
			t.Fatalf("export: %s", r.stderr)
		}
		os.WriteFile(filepath.Join(dir, "judge-session.jsonl"), mustRead(t, dst), 0o644)
	}
	want := map[string]map[string]float64{
		"allergy-ok":        {"helpfulness": 0.79, "retention": 1, "role": 1, "completeness": 1, "relevancy": 1},
		"allergy-forgotten": {"helpfulness": 0.21, "retention": 2.0 / 3, "role": 1, "completeness": 0, "relevancy": 1},
		"off-role":          {"helpfulness": 0.21, "retention": 1, "role": 2.0 / 3, "completeness": 0, "relevancy": 2.0 / 3},
	}
	check := func(out string) {
		t.Helper()
		lines := resultLines(t, filepath.Join(dir, out, "results.jsonl"))
		if len(lines) != 3 {
			t.Fatalf("%s: %d results, want 3", out, len(lines))
		}
		for _, l := range lines {
			for _, m := range l.Metrics {
				w, ok := want[l.CaseID][m.Metric]
				if !ok || m.Score == nil || math.Abs(*m.Score-w) > 1e-9 {
					t.Errorf("%s: %s %s: score %v (%s; error %v), want %v", out, l.CaseID, m.Metric, m.Score, m.Reason, m.Error, w)
				}
			}
		}
	}
	check("out")
	// The chats share their first four turns, and a request that is the
	// same in several chats is one call: 1 steps + 3 scores; facts of
	// user turns 2 and 4 once, of turn 6 per chat (5); retention of
	// assistant turns 3 and 7 once, of turn 5 per chat (5); 3 role calls;
	// 3 intention and 3 completeness calls; relevancy of the first
	// interaction once, of the other two per chat (7). 30.
	if got := srv.Calls(); got != 30 {
		t.Errorf("%d judge calls, want 30", got)
	}
	page := string(mustRead(t, filepath.Join(dir, "out", "report.html")))
	for _, w := range []string{`<details class="conversation"><summary>conversation, 7 turns</summary>`,
		`<b>last assistant turn</b>You&#39;re welcome, enjoy!`, `<span class="role">assistant</span><pre>lol, figure it out yourself`,
		`<summary>tools called</summary>`, "<dt>chatbot_role</dt>"} {
		if !strings.Contains(page, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	var details struct {
		Verdicts []struct {
			Turn int  `json:"turn"`
			Pass bool `json:"pass"`
		} `json:"verdicts"`
	}
	for _, l := range resultLines(t, filepath.Join(dir, "out", "results.jsonl")) {
		for _, m := range l.Metrics {
			if l.CaseID == "off-role" && m.Metric == "role" {
				if err := json.Unmarshal(m.Details, &details); err != nil || len(details.Verdicts) != 3 || details.Verdicts[1].Turn != 5 || details.Verdicts[1].Pass {
					t.Errorf("off-role role details %s", m.Details)
				}
			}
		}
	}

	// Offline, the recorded session gives the same scores.
	off := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "offline", "--no-progress")
	if off.code != exitThreshold || !strings.Contains(off.stdout, "REPLAYED") {
		t.Fatalf("offline: exit %d\n%s\n%s", off.code, off.stdout, off.stderr)
	}
	check("offline")
}
