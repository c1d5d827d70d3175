package conversation_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/agentanvil/anvil/abi"
)

// reply is one scripted judge answer: it applies to a request whose
// Purpose is purpose and whose messages contain every string in contains;
// the first that applies answers.
type reply struct {
	purpose  string
	contains []string
	content  string
	err      *abi.Error
}

// scripted is an sdk.Host whose judge answers from a script and records
// every request, batch by batch, and every log line.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	batches [][]abi.JudgeRequest
	logs    []string
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
	s.batches = append(s.batches, reqs)
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "no scripted reply for %s:\n%s", r.Purpose, prompt(r))}
	next:
		for _, rep := range s.replies {
			if rep.purpose != r.Purpose {
				continue
			}
			for _, c := range rep.contains {
				if !strings.Contains(prompt(r), c) {
					continue next
				}
			}
			if rep.err != nil {
				out[i] = abi.JudgeResponse{Error: rep.err}
			} else {
				out[i] = abi.JudgeResponse{Content: rep.content, JSON: []byte(rep.content),
					Usage: abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 20, USD: 0.001}}
			}
			break
		}
	}
	return out, nil
}

func (s *scripted) Log(_ context.Context, level slog.Level, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, level.String()+" "+msg)
}

// shape is the purposes of each batch, "facts,facts|retention".
func (s *scripted) shape() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var bs []string
	for _, b := range s.batches {
		var ps []string
		for _, r := range b {
			ps = append(ps, r.Purpose)
		}
		bs = append(bs, strings.Join(ps, ","))
	}
	return strings.Join(bs, "|")
}

func verdict(purpose, v, reason string, contains ...string) reply {
	return reply{purpose: purpose, contains: contains, content: fmt.Sprintf(`{"reason":%q,"verdict":%q}`, reason, v)}
}
