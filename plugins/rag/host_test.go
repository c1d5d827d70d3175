package rag_test

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
// Purpose is purpose (if set), whose prompt contains every string in
// contains and none in lacks; err, if set, refuses the whole batch.
type reply struct {
	purpose  string
	contains []string
	lacks    []string
	resp     abi.JudgeResponse
	err      error
}

// scripted is an sdk.Host whose judge answers from a script (first match
// wins) and records every batch, request and log line.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	batches [][]abi.JudgeRequest
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

func (rep reply) matches(r abi.JudgeRequest) bool {
	if rep.purpose != "" && rep.purpose != r.Purpose {
		return false
	}
	p := prompt(r)
	for _, c := range rep.contains {
		if !strings.Contains(p, c) {
			return false
		}
	}
	for _, c := range rep.lacks {
		if strings.Contains(p, c) {
			return false
		}
	}
	return true
}

func (s *scripted) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, reqs)
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		s.calls = append(s.calls, r)
		found := false
		for _, rep := range s.replies {
			if !rep.matches(r) {
				continue
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

var testUsage = abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 20, USD: 0.001}

func jsonReply(purpose string, v any, contains ...string) reply {
	b, _ := json.Marshal(v)
	return reply{purpose: purpose, contains: contains, resp: abi.JudgeResponse{Content: string(b), JSON: b, Usage: testUsage}}
}

// listReply answers an extraction request (statements, claims, truths).
func listReply(purpose string, items ...string) reply {
	if items == nil {
		items = []string{}
	}
	return jsonReply(purpose, map[string][]string{purpose: items})
}

// v is one scripted verdict: "yes", "no:reason", "idk:reason".
type v string

func verdictsJSON(vs ...v) map[string]any {
	out := []map[string]string{}
	for _, x := range vs {
		verdict, reason, _ := strings.Cut(string(x), ":")
		out = append(out, map[string]string{"verdict": verdict, "reason": reason})
	}
	return map[string]any{"verdicts": out}
}

// verdictReply answers the first verdict request (not a repair).
func verdictReply(vs ...v) reply {
	r := jsonReply("verdicts", verdictsJSON(vs...))
	r.lacks = []string{"Your reply is invalid"}
	return r
}

// repairReply answers a repair request whose prompt states problem.
func repairReply(problem string, vs ...v) reply {
	return jsonReply("verdicts", verdictsJSON(vs...), "Your reply is invalid ("+problem+")")
}

func reasonReply(text string) reply {
	return jsonReply("reason", map[string]string{"reason": text})
}

func errReply(purpose string, code abi.Code) reply {
	return reply{purpose: purpose, resp: abi.JudgeResponse{Error: abi.Errorf(code, "scripted %s fault", purpose)}}
}

func statements(n int) []string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("Statement %d.", i+1))
	}
	return s
}
