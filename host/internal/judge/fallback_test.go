package judge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

const fallbackWarning = "judge rejected its structured-output mode"

func TestJSONSchemaRejectedFallsBackToJSONMode(t *testing.T) {
	for _, flavor := range []string{judgetest.FlavorOpenAI, judgetest.FlavorLlamaCpp, judgetest.FlavorVLLM, judgetest.FlavorLiteLLM, judgetest.FlavorPydantic} {
		t.Run(flavor, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
			h.srv.On(judgetest.ResponseFormatType("json_schema"), judgetest.SchemaRejection(flavor))
			h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "ok", "score": 7}`})

			var calls, attempts []int
			for i := range 3 {
				resp := h.judge.Do(context.Background(), schemaRequest(fmt.Sprintf("grade %d", i)))
				mustOK(t, resp)
				if string(resp.JSON) != `{"reason":"ok","score":7}` {
					t.Errorf("JSON = %s", resp.JSON)
				}
				calls = append(calls, resp.Usage.Calls)
				attempts = append(attempts, resp.Usage.Attempts)
			}
			// The rejected call is made again in JSON mode, then JSON mode
			// for the rest of the run: the server served three completions
			// (three calls) over four HTTP attempts.
			if fmt.Sprint(calls) != "[1 1 1]" || fmt.Sprint(attempts) != "[2 1 1]" || h.srv.Calls() != 4 {
				t.Errorf("usage calls %v, attempts %v, server calls %d; want [1 1 1], [2 1 1], 4", calls, attempts, h.srv.Calls())
			}
			if tot := h.judge.Totals(); tot.Calls != 3 || tot.Attempts != int64(h.srv.Calls()) {
				t.Errorf("totals: calls %d, attempts %d; want 3 completions served and %d attempts (what the server received)", tot.Calls, tot.Attempts, h.srv.Calls())
			}
			sent := h.srv.Requests()
			for i, r := range sent[1:] {
				if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_object" || !strings.Contains(r.LastMessage(), "JSON Schema") {
					t.Errorf("request %d after the rejection: response_format %+v, last message %q; want json_object with the schema in the prompt",
						i+2, r.ResponseFormat, r.LastMessage())
				}
			}
			if n := strings.Count(h.logs.String(), fallbackWarning); n != 1 {
				t.Errorf("%d fallback warnings; want exactly 1:\n%s", n, h.logs.String())
			}
			if !strings.Contains(h.logs.String(), "supports_json_schema: false") {
				t.Errorf("the warning does not name the setting:\n%s", h.logs.String())
			}
		})
	}
}

func TestFallbackIsSaidOnceUnderConcurrency(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true; c.MaxConcurrency = 8 })
	h.srv.On(judgetest.ResponseFormatType("json_schema"), judgetest.SchemaRejection(judgetest.FlavorOpenAI))
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "ok", "score": 7}`})
	reqs := make([]abi.JudgeRequest, 32)
	for i := range reqs {
		reqs[i] = schemaRequest(fmt.Sprintf("grade %d", i))
	}
	for _, r := range h.judge.Batch(context.Background(), reqs) {
		mustOK(t, r)
	}
	if n := strings.Count(h.logs.String(), fallbackWarning); n != 1 {
		t.Errorf("%d fallback warnings; want exactly 1", n)
	}
	// Only requests already on their way when the first rejection came
	// back can be rejected: at most one per connection slot.
	if rejected := h.srv.Calls() - len(reqs); rejected < 1 || rejected > 8 {
		t.Errorf("%d rejected calls; want 1 to 8", rejected)
	}
	// Rejected calls made again are attempts, not calls: one call per
	// completion served, one attempt per request the server received.
	if tot := h.judge.Totals(); tot.Calls != int64(len(reqs)) || tot.Attempts != int64(h.srv.Calls()) {
		t.Errorf("totals: calls %d, attempts %d; want %d and %d", tot.Calls, tot.Attempts, len(reqs), h.srv.Calls())
	}
}

func TestFallbackGoesDownToPromptMode(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
	h.srv.On(judgetest.ResponseFormatType("json_schema"), judgetest.SchemaRejection(judgetest.FlavorOpenAI))
	h.srv.On(judgetest.ResponseFormatType("json_object"), judgetest.Reply{Status: 400,
		ErrorMessage: "Invalid parameter: 'response_format' of type 'json_object' is not supported with this model."})
	h.srv.SetDefault(judgetest.Reply{Content: "Here you go: {\"reason\": \"ok\", \"score\": 7}"})
	resp := h.judge.Do(context.Background(), schemaRequest("grade"))
	mustOK(t, resp)
	sent := h.srv.Requests()
	if resp.Usage.Calls != 1 || resp.Usage.Attempts != 3 || len(sent) != 3 || sent[2].ResponseFormat != nil {
		t.Fatalf("calls %d, attempts %d, sent %d, last response_format %+v; want 1 call in 3 attempts ending in prompt mode",
			resp.Usage.Calls, resp.Usage.Attempts, len(sent), sent[len(sent)-1].ResponseFormat)
	}
	if n := strings.Count(h.logs.String(), fallbackWarning); n != 2 {
		t.Errorf("%d fallback warnings; want one per step (2)", n)
	}
}

func TestNoModeWorksNamesTheSetting(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
	h.srv.SetDefault(judgetest.Reply{Status: 400, ErrorMessage: "response_format is not supported by this deployment"})
	resp := h.judge.Do(context.Background(), schemaRequest("grade"))
	wantError(t, resp, abi.CodeJudge, "request rejected (HTTP 400)", "supports_json_schema: false")
	if h.srv.Calls() != 3 {
		t.Errorf("server calls %d; want 3 (json_schema, json_object, prompt)", h.srv.Calls())
	}
}

func TestUnrelatedRejectionDoesNotFallBack(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
	h.srv.SetDefault(judgetest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens."})
	resp := h.judge.Do(context.Background(), schemaRequest("grade"))
	wantError(t, resp, abi.CodeJudge, "request rejected (HTTP 400)", "maximum context length")
	if h.srv.Calls() != 1 || strings.Contains(h.logs.String(), fallbackWarning) {
		t.Errorf("server calls %d; want 1 and no fallback", h.srv.Calls())
	}
}

func TestFallbackKeepsTheCacheKey(t *testing.T) {
	// A reply obtained after the fallback answers the same request in a
	// later run, which starts in json_schema mode again.
	st := openStore(t)
	srv := judgetest.New(t)
	srv.On(judgetest.ResponseFormatType("json_schema"), judgetest.SchemaRejection(judgetest.FlavorLlamaCpp))
	srv.SetDefault(judgetest.Reply{Content: `{"reason": "ok", "score": 7}`})
	edit := func(c *Config) { c.SupportsJSONSchema = true }
	mustOK(t, newHarnessOn(t, srv, srv.URL(), edit, WithCache(st, CacheReadWrite)).judge.Do(context.Background(), schemaRequest("grade")))
	before := srv.Calls()
	resp := newHarnessOn(t, srv, srv.URL(), edit, WithCache(st, CacheReadWrite)).judge.Do(context.Background(), schemaRequest("grade"))
	mustOK(t, resp)
	if !resp.Usage.CacheHit || srv.Calls() != before {
		t.Errorf("second run: cache hit %v, %d new calls; want a hit and none", resp.Usage.CacheHit, srv.Calls()-before)
	}
}
