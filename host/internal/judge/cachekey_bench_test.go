package judge

import (
	"bytes"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
)

// gevalRequest is a G-Eval scoring request as plugins/geval makes it: a
// system prompt, a 2.5 KB user prompt with characters encoding/json
// escapes, a reason-and-score schema, a score spec and 20 alternatives.
func gevalRequest() abi.JudgeRequest {
	prompt := string(bytes.Repeat([]byte("The actual output answers the input <correctly> & completely. "), 40))
	req := schemaRequest(prompt)
	req.Messages = append([]abi.Message{{Role: "system", Content: "You are a strict evaluator."}}, req.Messages...)
	req.TopLogprobs = 20
	req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
	return req
}

// gevalJudge is a judge with logprobs and json_schema, no server behind
// it: planning never sends.
func gevalJudge(b *testing.B) *Judge {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.SupportsLogprobs, cfg.SupportsJSONSchema = true, true
	cfg.MaxTopLogprobs = 20
	j, err := New(cfg, WithAPIKey(testKey))
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// BenchmarkCacheKey is the cache key of a G-Eval scoring request (key)
// and the whole planning of it, key and wire text included (plan).
func BenchmarkCacheKey(b *testing.B) {
	j := gevalJudge(b)
	req := gevalRequest()
	p, perr := j.plan(req, 0)
	if perr != nil {
		b.Fatal(perr)
	}
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		cputime.Report(b)
		for b.Loop() {
			if _, err := p.cacheKey(j.cfg.Model, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		cputime.Report(b)
		for b.Loop() {
			if _, err := j.plan(req, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	// plan_body is what one G-Eval call encodes: its plan and its body in
	// json_schema mode.
	b.Run("plan_body", func(b *testing.B) {
		b.ReportAllocs()
		cputime.Report(b)
		temp := 0.0
		for b.Loop() {
			p, err := j.plan(req, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.requestBody(j.cfg.Model, call{temperature: &temp}, modeJSONSchema); err != nil {
				b.Fatal(err)
			}
		}
	})
}
