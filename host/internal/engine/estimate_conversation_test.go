package engine_test

import (
	"fmt"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/judgetest"
)

// Two chats of three user and three assistant turns (and a system turn),
// no request shared between them.
const chatCases = `{"id": "a", "scenario": "Buy a snack.", "chatbot_role": "A snack-shop assistant.", "turns": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "I am Ann, allergic to nuts."}, {"role": "assistant", "content": "Noted, Ann."}, {"role": "user", "content": "I live in Oslo."}, {"role": "assistant", "content": "Oslo it is."}, {"role": "user", "content": "Suggest a snack."}, {"role": "assistant", "content": "A fruit bar."}]}
{"id": "b", "scenario": "Return a toy.", "chatbot_role": "A toy-shop assistant.", "turns": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I am Bo, I bought a kite."}, {"role": "assistant", "content": "Hello Bo."}, {"role": "user", "content": "It broke on day one."}, {"role": "assistant", "content": "Sorry to hear."}, {"role": "user", "content": "Can I return it?"}, {"role": "assistant", "content": "Yes, within 30 days."}]}
`

// chatJudge answers every conversational prompt with a reply that asks
// for every follow-up call a kind can make: a fact in every user turn
// (so every later assistant turn is judged for retention) and three
// intentions (what the estimate's dry run assumes a list holds).
func chatJudge(t *testing.T) *judgetest.Server {
	srv := judgetest.New(t)
	verdict := judgetest.Reply{Content: `{"reason": "fine", "verdict": "yes"}`}
	srv.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Read it.", "Judge it."]}`})
	srv.On(judgetest.ContainsMessage("Score the test case"), judgetest.JSONScoreReply("Good.", "8", map[string]float64{"8": .7, "7": .3}))
	srv.On(judgetest.ContainsMessage("Extract the facts"), judgetest.Reply{Content: `{"facts": {"fact": "something"}}`})
	srv.On(judgetest.ContainsMessage("forgot or contradicts"), judgetest.Reply{Content: `{"reason": "kept", "verdict": "no"}`})
	srv.On(judgetest.ContainsMessage("breaks that role"), judgetest.Reply{Content: `{"out_of_character": []}`})
	srv.On(judgetest.ContainsMessage("List what the USER wanted"), judgetest.Reply{Content: `{"intentions": ["one", "two", "three"]}`})
	srv.SetDefault(verdict)
	return srv
}

// For every conversational kind, estimate's judge calls are the calls a
// cold run then makes on multi-turn cases whose replies ask for every
// follow-up: knowledge_retention's second batch (one verdict per
// assistant turn after a fact) included.
func TestEstimateCountsConversationalCalls(t *testing.T) {
	for _, tc := range []struct {
		kind, params string
		calls        int // by the run over both chats, by hand
	}{
		// 1 steps call + 1 score a chat.
		{"conversational_geval", `{criteria: "Helps the user.", evaluation_params: [scenario, turns]}`, 1 + 2},
		// U = 3 facts calls, then the 3 assistant turns after the first fact: 6 a chat.
		{"knowledge_retention", "{}", 12},
		// 1 a chat.
		{"role_adherence", "{}", 2},
		// 1 intentions call + 3 verdicts a chat.
		{"conversation_completeness", "{}", 8},
		// 3 interactions a chat, in one batch.
		{"turn_relevancy", "{window: 2}", 6},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := chatJudge(t)
			cfg := fmt.Sprintf(`version: 1
dataset: cases.jsonl
judges:
  default:
    base_url: %s
    model: judge-model
    api_key_env: ANVIL_TEST_KEY
    supports_logprobs: true
    supports_json_schema: true
    price: {input_per_million: 1, output_per_million: 2}
defaults:
  judge: default
metrics:
  - name: m
    kind: %s
    params: %s
`, srv.URL(), tc.kind, tc.params)
			e := newEnv(t, cfg)
			writeFiles(t, e.dir, map[string]string{"cases.jsonl": chatCases})
			rep := estimateIn(t, e, "off")
			if srv.Calls() != 0 {
				t.Fatalf("estimate sent %d calls", srv.Calls())
			}
			s := e.run(t, "off", engine.RunOptions{})
			if m := s.Metrics[0]; m.Errors != 0 {
				t.Fatalf("run: %d errors; the script does not fit the kind", m.Errors)
			}
			if srv.Calls() != tc.calls {
				t.Errorf("run: %d judge calls; want %d", srv.Calls(), tc.calls)
			}
			if rep.Total.JudgeCalls != srv.Calls() {
				t.Errorf("estimate: %d judge calls; the run made %d", rep.Total.JudgeCalls, srv.Calls())
			}
		})
	}
}
