package geval_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// The judge these tests script is plugins/internal/scripted's, shared by
// the first-party kinds' tests.
type (
	reply    = scripted.Reply
	scripter = scripted.Host
)

func prompt(r abi.JudgeRequest) string { return scripted.Prompt(r) }

// stepsReply answers a steps-generation request.
func stepsReply(cacheHit bool, steps ...string) reply {
	b, _ := json.Marshal(map[string][]string{"steps": steps})
	return reply{Purpose: "steps", Resp: abi.JudgeResponse{
		Content: string(b), JSON: b,
		Usage: abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 40, USD: 0.001, CacheHit: cacheHit},
	}}
}

// scoreReply answers a scoring request with a weighted score.
func scoreReply(reason string, raw int, sr abi.ScoreResult, contains ...string) reply {
	b := fmt.Appendf(nil, `{"reason":%q,"score":%d}`, reason, raw)
	sr.Raw = raw
	return reply{Purpose: "score", Contains: contains, Resp: abi.JudgeResponse{
		Content: string(b), JSON: b, Score: &sr,
		Usage: abi.Usage{Model: "judge-1", InputTokens: 300, OutputTokens: 30, USD: 0.002},
	}}
}

// strictReply answers a strict-mode scoring request (no host score).
func strictReply(reason string, raw int) reply {
	b := fmt.Appendf(nil, `{"reason":%q,"score":%d}`, reason, raw)
	return reply{Purpose: "score", Resp: abi.JudgeResponse{Content: string(b), JSON: b,
		Usage: abi.Usage{InputTokens: 300, OutputTokens: 30}}}
}

func weighted(v float64, cands ...abi.ScoreCandidate) abi.ScoreResult {
	return abi.ScoreResult{Value: v, Mode: abi.ScoreWeighted, Candidates: cands}
}
