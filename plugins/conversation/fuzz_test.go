package conversation_test

import (
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/conversation"
)

// FuzzJudgeReplies: whatever the judge answers, every kind returns a
// score in [0, 1] or a judge_error, never a panic or another fault.
func FuzzJudgeReplies(f *testing.F) {
	for _, s := range []string{
		`{"facts":{"a":"b","c":["d"]}}`, `{"facts":{}}`, `{"facts":{"a":1}}`, `{"facts":null}`,
		`{"reason":"r","verdict":"yes"}`, `{"reason":"r","verdict":"No."}`, `{"verdict":null}`,
		`{"out_of_character":[{"turn":2,"reason":"x"},{"turn":-1},{"turn":1e9}]}`, `{"out_of_character":[{"turn":"2"}]}`,
		`{"intentions":["a","",null]}`, `{"intentions":[]}`, `[]`, `null`, ``, `{"a":1,"a":2}`, "\xff",
	} {
		f.Add(s)
	}
	c := abi.TestCase{ID: "f", ChatbotRole: "r", Turns: turns("system: s", "user: a", "assistant: b", "user: c", "assistant: d", "tool: t")}
	kinds := []string{conversation.KindKnowledgeRetention, conversation.KindRoleAdherence, conversation.KindConversationCompleteness, conversation.KindTurnRelevancy}
	f.Fuzz(func(t *testing.T, content string) {
		var replies []reply
		for _, p := range []string{"knowledge", "retention", "out_of_character", "intentions", "completeness", "relevancy"} {
			replies = append(replies, answer(p, content))
		}
		for _, k := range kinds {
			res := measure(&scripter{Replies: replies}, k, "", c)
			switch {
			case res.Error != nil:
				if res.Error.Code != abi.CodeJudge {
					t.Fatalf("%s on %q: error %v, want judge_error", k, content, res.Error)
				}
			case res.Score == nil || *res.Score < 0 || *res.Score > 1:
				t.Fatalf("%s on %q: score %v", k, content, res.Score)
			}
		}
	})
}
