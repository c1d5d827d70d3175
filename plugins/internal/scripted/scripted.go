// Package scripted is an sdk.Host for the first-party kinds' tests: its
// judge answers from a script (first match wins) and it records every
// batch, request and log line. It has no Embed method, so to a kind it
// is also a host of ABI 1.4 or older, which cannot embed. Details decodes
// what a kind measured.
package scripted

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// Reply is one scripted judge answer: it applies to a request whose
// Purpose is Purpose (if set), whose prompt contains every string in
// Contains and none in Lacks; Err, if set, refuses the whole batch.
type Reply struct {
	Purpose  string
	Contains []string
	Lacks    []string
	Resp     abi.JudgeResponse
	Err      error
}

// Host answers judge requests from Replies. A kind may judge from
// several goroutines, so what it records is behind mu and read through
// Calls, Batches and Logs, which copy. Replies is the test's to set
// before the kind runs.
type Host struct {
	Replies []Reply

	mu      sync.Mutex
	batches [][]abi.JudgeRequest
	calls   []abi.JudgeRequest
	logs    []string
}

// Calls are the judge requests, in the order they arrived.
func (s *Host) Calls() []abi.JudgeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Batches are the judge batches, in the order they arrived.
func (s *Host) Batches() [][]abi.JudgeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// Logs are the log lines, "LEVEL message", in order.
func (s *Host) Logs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.logs)
}

// Prompt is a request's messages, one after the other.
func Prompt(r abi.JudgeRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

func (rep Reply) matches(r abi.JudgeRequest) bool {
	if rep.Purpose != "" && rep.Purpose != r.Purpose {
		return false
	}
	p := Prompt(r)
	for _, c := range rep.Contains {
		if !strings.Contains(p, c) {
			return false
		}
	}
	for _, c := range rep.Lacks {
		if strings.Contains(p, c) {
			return false
		}
	}
	return true
}

// Judge answers each request with the first matching reply, or a
// judge_error naming its purpose.
func (s *Host) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, reqs)
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		s.calls = append(s.calls, r)
		found := false
		for _, rep := range s.Replies {
			if !rep.matches(r) {
				continue
			}
			if rep.Err != nil {
				return nil, rep.Err
			}
			out[i] = rep.Resp
			found = true
			break
		}
		if !found {
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "no scripted reply for purpose %q", r.Purpose)}
		}
	}
	return out, nil
}

// Log records the message.
func (s *Host) Log(_ context.Context, level slog.Level, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, level.String()+" "+msg)
}

// Purposes are the purposes of the requests, in order.
func (s *Host) Purposes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p []string
	for _, c := range s.calls {
		p = append(p, c.Purpose)
	}
	return p
}

// Shape is the purposes of each batch: "facts,facts|retention".
func (s *Host) Shape() string {
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

// Usage is every scripted reply's usage.
var Usage = abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 20, USD: 0.001}

// JSON answers requests of purpose whose prompt contains every string in
// contains, and no repair request, with v.
func JSON(purpose string, v any, contains ...string) Reply {
	b, _ := json.Marshal(v)
	return Reply{Purpose: purpose, Contains: contains, Lacks: []string{"Your reply is invalid"},
		Resp: abi.JudgeResponse{Content: string(b), JSON: b, Usage: Usage}}
}

// Repair answers the repair request whose prompt states problem with v.
func Repair(purpose string, v any, problem string) Reply {
	r := JSON(purpose, v)
	r.Lacks, r.Contains = nil, []string{"Your reply is invalid (" + problem}
	return r
}

// Fault answers requests of purpose with an error of code.
func Fault(purpose string, code abi.Code) Reply {
	return Reply{Purpose: purpose, Resp: abi.JudgeResponse{Error: abi.Errorf(code, "scripted %s fault", purpose)}}
}

// Verdicts is {"verdicts": [...]} of "yes", "no:reason", "idk:reason".
func Verdicts(vs ...string) map[string]any {
	return map[string]any{"verdicts": Items("", vs...)}
}

// Items is a list of {noun: item, verdict, reason} from "item|verdict:reason"
// (noun "": "verdict:reason", no item).
func Items(noun string, its ...string) []map[string]string {
	out := []map[string]string{}
	for _, it := range its {
		o := map[string]string{}
		v := it
		if noun != "" {
			var item string
			item, v, _ = strings.Cut(it, "|")
			o[noun] = item
		}
		verdict, reason, _ := strings.Cut(v, ":")
		o["verdict"], o["reason"] = verdict, reason
		out = append(out, o)
	}
	return out
}

// Details is a result's details decoded into T; a measure error, or
// details that do not decode, fails t.
func Details[T any](t testing.TB, res *abi.MeasureResult) T {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("measure error: %v", res.Error)
	}
	var d T
	if err := json.Unmarshal(res.Details, &d); err != nil {
		t.Fatalf("details %s: %v", res.Details, err)
	}
	return d
}
