package testkit

import (
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// CapitalsJudge is the fake judge of the tests that run one G-Eval
// metric over capital-city cases through a whole SDK (host/anviltest's
// Go tests, python/tests through python/anvil_test.go): asked for
// evaluation steps it gives one; a case whose prompt says Sydney scores 2
// with the reason "Sydney is not the capital; Canberra is."; every other
// case scores 9. Those tests assert on these replies, so they share this
// one script rather than each keeping a copy that could drift.
func CapitalsJudge(t testing.TB) *judgetest.Server {
	s := judgetest.New(t)
	s.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare with the expected output."]}`})
	s.On(judgetest.ContainsMessage("Sydney"), judgetest.JSONScoreReply(CapitalsSydneyReason, "2", map[string]float64{"2": 1}))
	s.SetDefault(judgetest.JSONScoreReply("Agrees with the expected output.", "9", map[string]float64{"9": 1}))
	return s
}

// CapitalsSydneyReason is CapitalsJudge's reason for the Sydney case.
const CapitalsSydneyReason = "Sydney is not the capital; Canberra is."
