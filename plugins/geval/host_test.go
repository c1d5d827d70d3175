package geval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/agentanvil/anvil/abi"
)

// reply is one scripted judge answer: it applies to a request whose
// Purpose is purpose (if set) and whose messages contain every string in
// contains; err, if set, refuses the whole batch.
type reply struct {
	purpose  string
	contains []string
	resp     abi.JudgeResponse
	err      error
}

// scripted is an sdk.Host whose judge answers from a script and records
// every request and log line.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	calls   []abi.JudgeRequest
	logs    []logLine
}

type logLine struct {
	level slog.Level
	msg   string
}

func prompt(r abi.JudgeRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

func (s *scripted) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		s.calls = append(s.calls, r)
		found := false
	next:
		for _, rep := range s.replies {
			if rep.purpose != "" && rep.purpose != r.Purpose {
				continue
			}
			for _, c := range rep.contains {
				if !strings.Contains(prompt(r), c) {
					continue next
				}
			}
			if rep.err != nil {
				return nil, rep.err
			}
			out[i] = rep.resp
			found = true
			break
		}
		if !found {
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "no scripted reply for purpose %q", r.Purpose)}
		}
	}
	return out, nil
}

func (s *scripted) Log(_ context.Context, level slog.Level, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, logLine{level, msg})
}

func (s *scripted) purposes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p []string
	for _, c := range s.calls {
		p = append(p, c.Purpose)
	}
	return p
}

// stepsReply answers a steps-generation request.
func stepsReply(cacheHit bool, steps ...string) reply {
	b, _ := json.Marshal(map[string][]string{"steps": steps})
	return reply{purpose: "steps", resp: abi.JudgeResponse{
		Content: string(b), JSON: b,
		Usage: abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 40, USD: 0.001, CacheHit: cacheHit},
	}}
}

// scoreReply answers a scoring request with a weighted score.
func scoreReply(reason string, raw int, sr abi.ScoreResult, contains ...string) reply {
	b := fmt.Appendf(nil, `{"reason":%q,"score":%d}`, reason, raw)
	sr.Raw = raw
	return reply{purpose: "score", contains: contains, resp: abi.JudgeResponse{
		Content: string(b), JSON: b, Score: &sr,
		Usage: abi.Usage{Model: "judge-1", InputTokens: 300, OutputTokens: 30, USD: 0.002},
	}}
}

// strictReply answers a strict-mode scoring request (no host score).
func strictReply(reason string, raw int) reply {
	b := fmt.Appendf(nil, `{"reason":%q,"score":%d}`, reason, raw)
	return reply{purpose: "score", resp: abi.JudgeResponse{Content: string(b), JSON: b,
		Usage: abi.Usage{InputTokens: 300, OutputTokens: 30}}}
}

func weighted(v float64, cands ...abi.ScoreCandidate) abi.ScoreResult {
	return abi.ScoreResult{Value: v, Mode: abi.ScoreWeighted, Candidates: cands}
}
