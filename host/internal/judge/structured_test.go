package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

const verdictSchema = `{
  "type": "object",
  "properties": {
    "reason": {"type": "string"},
    "score": {"type": "integer", "minimum": 0, "maximum": 10}
  },
  "required": ["reason", "score"],
  "additionalProperties": false
}`

func schemaRequest(text string) abi.JudgeRequest {
	req := userRequest(text)
	req.Schema = json.RawMessage(verdictSchema)
	req.SchemaName = "verdict"
	return req
}

func TestSchemaModeChosenByConfig(t *testing.T) {
	tests := []struct {
		name            string
		jsonSchema      bool
		jsonMode        bool
		strict          bool
		reply           string
		wantFormat      string
		wantInstruction bool
	}{
		{"json_schema", true, true, false, `{"reason": "ok", "score": 7}`, "json_schema", false},
		{"json_schema strict", true, false, true, `{"reason": "ok", "score": 7}`, "json_schema", false},
		{"json_object", false, true, false, `{"reason": "ok", "score": 7}`, "json_object", true},
		{"prompt with fences and a trailing comma", false, false, false, "Sure!\n```json\n{\"reason\": \"ok\", \"score\": 7,}\n```", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.SupportsJSONSchema, c.SupportsJSONMode, c.JSONSchemaStrict = tc.jsonSchema, tc.jsonMode, tc.strict
			})
			h.srv.SetDefault(judgetest.Reply{Content: tc.reply})

			resp := h.judge.Do(context.Background(), schemaRequest("Grade: the sky is blue."))
			mustOK(t, resp)
			if string(resp.JSON) != `{"reason":"ok","score":7}` {
				t.Errorf("JSON = %s; want the canonical object", resp.JSON)
			}
			if resp.Content != tc.reply {
				t.Errorf("Content = %q; want the reply as written", resp.Content)
			}

			sent := h.srv.Requests()
			if len(sent) != 1 {
				t.Fatalf("%d requests; want 1 (no repair)", len(sent))
			}
			got := sent[0]
			switch tc.wantFormat {
			case "":
				if got.ResponseFormat != nil {
					t.Errorf("response_format = %+v; want none", got.ResponseFormat)
				}
			default:
				if got.ResponseFormat == nil || got.ResponseFormat.Type != tc.wantFormat {
					t.Fatalf("response_format = %+v; want %s", got.ResponseFormat, tc.wantFormat)
				}
			}
			if tc.wantFormat == "json_schema" {
				js := got.ResponseFormat.JSONSchema
				if js == nil || js.Name != "verdict" {
					t.Fatalf("json_schema = %+v; want name verdict", js)
				}
				var sentSchema, wantSchema any
				json.Unmarshal(js.Schema, &sentSchema)
				json.Unmarshal([]byte(verdictSchema), &wantSchema)
				if sb, _ := json.Marshal(sentSchema); string(sb) != string(mustMarshal(wantSchema)) {
					t.Errorf("schema sent = %s; want %s", js.Schema, verdictSchema)
				}
				if tc.strict != (js.Strict != nil && *js.Strict) {
					t.Errorf("strict = %v; want %v", js.Strict, tc.strict)
				}
			}
			last := got.Messages[len(got.Messages)-1]
			hasInstruction := strings.Contains(last.Content, "JSON Schema") && strings.Contains(last.Content, `"score"`)
			if hasInstruction != tc.wantInstruction {
				t.Errorf("schema instruction in prompt = %v; want %v (last message %q)", hasInstruction, tc.wantInstruction, last.Content)
			}
			if len(got.Messages) != 2 || !strings.HasPrefix(last.Content, "Grade: the sky is blue.") {
				t.Errorf("messages = %+v; want the instruction appended to the user message", got.Messages)
			}
		})
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestRepairShowsErrorAndSucceeds(t *testing.T) {
	tests := []struct {
		name    string
		bad     string
		problem string
	}{
		{"schema failure", `{"reason": "ok", "score": "seven"}`, "does not satisfy the schema"},
		{"parse failure", `I would say seven out of ten.`, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
			h.srv.SetDefault(judgetest.Sequence(
				judgetest.Reply{Content: tc.bad, Usage: &judgetest.Usage{PromptTokens: 100, CompletionTokens: 10}},
				judgetest.Reply{Content: `{"reason": "fixed", "score": 7}`, Usage: &judgetest.Usage{PromptTokens: 150, CompletionTokens: 12}},
			))
			resp := h.judge.Do(context.Background(), schemaRequest("grade"))
			mustOK(t, resp)
			if string(resp.JSON) != `{"reason":"fixed","score":7}` {
				t.Fatalf("JSON = %s; want the repaired reply", resp.JSON)
			}
			reqs := h.srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests; want 2 (one repair)", len(reqs))
			}
			repair := reqs[1].Messages
			if len(repair) != 4 || repair[2].Role != "assistant" || repair[2].Content != tc.bad ||
				repair[3].Role != "user" || !strings.Contains(repair[3].Content, tc.problem) {
				t.Fatalf("repair conversation = %+v; want the bad reply then the error (%q)", repair, tc.problem)
			}
			if reqs[1].ResponseFormat == nil || reqs[1].ResponseFormat.Type != "json_schema" {
				t.Errorf("repair lost the response format: %+v", reqs[1].ResponseFormat)
			}
			// Both calls are paid for.
			if u := resp.Usage; u.InputTokens != 250 || u.OutputTokens != 22 || u.Attempts != 2 {
				t.Errorf("Usage = %+v; want 250 in, 22 out, 2 attempts", u)
			}
		})
	}
}

func TestRepairFailsTwice(t *testing.T) {
	h := newHarness(t, nil) // prompt mode
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "still wrong", "score": 11}`})
	resp := h.judge.Do(context.Background(), schemaRequest("grade"))
	wantError(t, resp, abi.CodeJudge, "judge grader (gpt-test)", "after one repair attempt", "does not satisfy the schema", "prompt mode", "score")
	if h.srv.Calls() != 2 {
		t.Errorf("server calls = %d; want exactly 2", h.srv.Calls())
	}
	if resp.Usage.Attempts != 2 {
		t.Errorf("Usage.Attempts = %d; want 2", resp.Usage.Attempts)
	}
}

func TestRefusalIsAnError(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Refusal: "I cannot help with that."})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "refused", "I cannot help with that.")
}

func TestParseTolerant(t *testing.T) {
	tests := []struct {
		name, in, want, errFrag string
	}{
		{"plain", `{"a":1}`, `{"a":1}`, ""},
		{"sorted and compact", "{ \"b\": 2,\n \"a\": [1, 2] }", `{"a":[1,2],"b":2}`, ""},
		{"prose around", `Here you go: {"score": 7} Hope that helps!`, `{"score":7}`, ""},
		{"code fence", "```json\n{\"score\": 7}\n```", `{"score":7}`, ""},
		{"trailing commas", `{"a": [1, 2,], "b": {"c": 3,},}`, `{"a":[1,2],"b":{"c":3}}`, ""},
		{"comma inside string kept", `{"a": "x,}", "b": 1,}`, `{"a":"x,}","b":1}`, ""},
		{"escaped quote in string", `{"a": "say \"hi\",]", "b": 2,}`, `{"a":"say \"hi\",]","b":2}`, ""},
		{"big number kept exactly", `{"n": 12345678901234567890}`, `{"n":12345678901234567890}`, ""},
		{"no object", `seven`, "", "no JSON object"},
		{"array only", `[1, 2]`, "", "no JSON object"},
		{"broken", `{"a": }`, "", "invalid JSON"},
		{"two objects", `{"a":1} and {"b":2}`, "", "invalid JSON"},
		{"reversed braces", `} {`, "", "no JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTolerant(tc.in)
			if tc.errFrag != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errFrag) {
					t.Fatalf("ParseTolerant(%q) = %s, %v; want error with %q", tc.in, got, err, tc.errFrag)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("ParseTolerant(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func FuzzParseTolerant(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a": [1, 2,],}`, "```json\n{\"s\": \"x,}\"}\n```", `}{`, `{"a": "\\"}`, `{{{`, `{"a":{"b":[{},],},}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTolerant(in)
		if err != nil {
			if got != nil {
				t.Fatalf("error %v with a result %q", err, got)
			}
			return
		}
		// Whatever it accepts is a canonical JSON object, stable under a
		// second pass.
		var obj map[string]any
		if jerr := json.Unmarshal(got, &obj); jerr != nil {
			t.Fatalf("ParseTolerant(%q) = %q, not a JSON object: %v", in, got, jerr)
		}
		again, err := ParseTolerant(string(got))
		if err != nil || string(again) != string(got) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, got, again, err)
		}
		// A valid object is returned with the same content.
		if json.Valid([]byte(in)) && len(in) > 0 {
			var direct any
			if json.Unmarshal([]byte(in), &direct) == nil {
				if m, ok := direct.(map[string]any); ok && strings.HasPrefix(strings.TrimSpace(in), "{") {
					if string(mustMarshal(m)) != string(mustMarshal(obj)) {
						t.Fatalf("valid object %q parsed as %q", in, got)
					}
				}
			}
		}
	})
}
