package rag_test

import (
	"encoding/json"
	"fmt"
	"strings"

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

var testUsage = abi.Usage{Model: "judge-1", InputTokens: 100, OutputTokens: 20, USD: 0.001}

func jsonReply(purpose string, v any, contains ...string) reply {
	b, _ := json.Marshal(v)
	return reply{Purpose: purpose, Contains: contains, Resp: abi.JudgeResponse{Content: string(b), JSON: b, Usage: testUsage}}
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
	r.Lacks = []string{"Your reply is invalid"}
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
	return reply{Purpose: purpose, Resp: abi.JudgeResponse{Error: abi.Errorf(code, "scripted %s fault", purpose)}}
}

func statements(n int) []string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("Statement %d.", i+1))
	}
	return s
}
