package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// retrievalJudge scripts examples/retrieval: per case (told apart by a phrase
// its retrieval context and its context share) and per kind (by a phrase
// of its prompt), the verdicts a careful judge would give.
func retrievalJudge(s *judgetest.Server) {
	sentences := func(its ...string) judgetest.Reply {
		return jsonReply(map[string]any{"verdicts": verdictList("sentence", its...)})
	}
	nodes := func(ns ...[]string) judgetest.Reply {
		out := []map[string]any{}
		for _, n := range ns {
			out = append(out, map[string]any{"statements": verdictList("statement", n...)})
		}
		return jsonReply(map[string]any{"nodes": out})
	}
	const (
		precision = "in rank order (node 1 ranked highest)"
		recall    = "Split the expected output into its sentences"
		relevancy = "break the node into the statements"
		halluc    = "each a piece of ground truth"
	)
	for _, c := range []struct {
		marker string
		kind   string
		reply  judgetest.Reply
	}{
		{"30 days of delivery", precision, verdictsReply("yes:'within 30 days of delivery'", "yes:'paid in full'", "no:Opening hours do not help.")},
		{"30 days of delivery", recall, sentences("30 days from delivery.|yes:[1] 'within 30 days of delivery'", "The refund is in full.|yes:[2] 'paid in full'")},
		{"30 days of delivery", relevancy, nodes([]string{"Items can be returned within 30 days of delivery.|yes"}, []string{"Refunds are paid in full.|yes"},
			[]string{"Stores open at 9am.|no:Opening hours are not about returns."})},
		{"30 days of delivery", halluc, verdictsReply("yes:30 days from delivery.", "yes:A full refund.")},

		{"warranty lasts two years", precision, verdictsReply("no:Gift cards are not about the warranty.", "yes:'lasts two years'", "yes:'Water damage is not covered'")},
		{"warranty lasts two years", recall, sentences("No.|yes:[3] 'not covered'", "The warranty lasts two years and excludes water damage.|yes:[2], [3]")},
		{"warranty lasts two years", relevancy, nodes([]string{"Gift cards never expire.|no:Gift cards, not the warranty."}, []string{"The warranty lasts two years.|yes"},
			[]string{"Water damage is not covered by the warranty.|yes"})},
		{"warranty lasts two years", halluc, verdictsReply("yes:Two years.", "no:The output says water damage is covered; the context says it is excluded.")},

		{"free on orders over $50", precision, verdictsReply("yes:'free on orders over $50'", "no:Countries do not say what shipping costs.")},
		{"free on orders over $50", recall, sentences("Shipping is free on orders over $50.|yes:[1]", "Express shipping costs $10.|no:No node gives the price of express shipping.")},
		{"free on orders over $50", relevancy, nodes([]string{"Standard shipping is free on orders over $50.|yes"}, []string{"The shop ships to 30 countries.|no:Where, not what it costs."})},
		{"free on orders over $50", halluc, verdictsReply("yes:Free over $50.")},
	} {
		s.On(judgetest.All(judgetest.ContainsMessage(c.kind), judgetest.ContainsMessage(c.marker)), c.reply)
	}
}

// TestRetrievalExample runs examples/retrieval with no judge key: the recorded
// session answers each kind's one call per case, the scores are the
// formulas' on the scripted verdicts, and the contradicted warranty fails
// the gate (exit 1). Re-record with
//
//	go test ./host/internal/cli -run TestRetrievalExample -update-recording
func TestRetrievalExample(t *testing.T) {
	dir := copyExample(t, "retrieval")
	recordExample(t, dir, "retrieval", retrievalJudge, exitThreshold, 12)

	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("offline retrieval example: exit %d, want 1 (re-record with -update-recording if prompts changed)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "REPLAYED from judge-session.jsonl") {
		t.Errorf("the table does not say the judge was replayed:\n%s", r.stdout)
	}
	want := map[string]map[string]float64{
		"refund":   {"contextual_precision": 1, "contextual_recall": 1, "contextual_relevancy": 2.0 / 3, "hallucination": 1},
		"warranty": {"contextual_precision": 7.0 / 12, "contextual_recall": 1, "contextual_relevancy": 2.0 / 3, "hallucination": 0.5},
		"shipping": {"contextual_precision": 1, "contextual_recall": 0.5, "contextual_relevancy": 0.5, "hallucination": 1},
	}
	wantScores(t, filepath.Join(dir, "out"), want)
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if s.Judge.Calls != 0 || metricOf(t, s, "hallucination").Failed != 1 || metricOf(t, s, "contextual_precision").Failed != 1 {
		t.Errorf("summary: %d judge calls; hallucination %+v; precision %+v", s.Judge.Calls, metricOf(t, s, "hallucination"), metricOf(t, s, "contextual_precision"))
	}
}
