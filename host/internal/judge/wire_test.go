package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/openai/openai-go/v3"
)

// wireCase is one generated request: a plan, a call and the mode it is sent in.
type wireCase struct {
	p    *plan
	c    call
	mode schemaMode
}

// wireCases generates requests over everything encodeRequest writes:
// roles (unknown ones are sent as user), strings encoding/json escapes
// (HTML, U+2028, control characters, invalid UTF-8), empty content and
// model, temperatures of every float format, repair messages, every
// structured-output mode with and without strict.
func wireCases(n int) []wireCase {
	rng := rand.New(rand.NewPCG(7, 13))
	texts := []string{"", "Score the answer from 1 to 10.", "<b>a & b</b>", "line\nbreak\ttab \"q\" \\", "\u2028\u2029 ünï 日本語 🙂",
		string([]byte{0xff, 0xfe, 'a', 0xc3}), "\x00\x01\x1f\x7f", string(make([]byte, 0)) + "long " + string(bytes.Repeat([]byte("word "), 400))}
	text := func() string { return texts[rng.IntN(len(texts))] + texts[rng.IntN(len(texts))] }
	roles := []string{"system", "user", "assistant", "tool", ""}
	temps := []float64{0, 1, 0.7, 1e-7, 1e21, 2.5e-10, 123456789.125, 0.30000000000000004}
	schemas := []string{`{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}`,
		`{"properties":{"a<b":{"description":"x & y \u2028","enum":[1.5e3,-0,"é"]}},"type":"object"}`}
	modes := []schemaMode{modeJSONSchema, modeJSONObject, modePrompt}
	var out []wireCase
	for range n {
		p := &plan{maxTokens: []int{0, 1, 512}[rng.IntN(3)], topLogprobs: []int{0, 5, 20}[rng.IntN(3)]}
		for range 1 + rng.IntN(4) {
			p.req.Messages = append(p.req.Messages, abi.Message{Role: roles[rng.IntN(len(roles))], Content: text()})
		}
		if rng.IntN(3) > 0 {
			p.schema = &compiledSchema{canonical: []byte(schemas[rng.IntN(len(schemas))])}
			p.schemaName = schemaName(text())
			p.strict = rng.IntN(2) == 0
		}
		c := call{n: rng.IntN(4)}
		if rng.IntN(3) > 0 {
			t := temps[rng.IntN(len(temps))]
			c.temperature = &t
		}
		if rng.IntN(4) == 0 {
			c.extra = []abi.Message{{Role: "assistant", Content: text()}, {Role: "user", Content: repairInstruction(fmt.Errorf("bad %s", text()))}}
		}
		out = append(out, wireCase{p: p, c: c, mode: modes[rng.IntN(len(modes))]})
	}
	return out
}

// sameBody reports whether the judge's body is openai-go's: byte for byte,
// but where openai-go (encoding/json) wrote invalid UTF-8 as the escape
// \ufffd and the judge writes the character U+FFFD itself, the same JSON.
func sameBody(ours, theirs []byte) bool {
	if bytes.Equal(ours, theirs) {
		return true
	}
	if !bytes.Contains(theirs, []byte(`\ufffd`)) {
		return false
	}
	var a, b any
	return json.Unmarshal(ours, &a) == nil && json.Unmarshal(theirs, &b) == nil && reflect.DeepEqual(a, b)
}

// TestRequestBodiesAreOpenAIGos: the body the judge encodes is, byte for
// byte, the one openai-go makes of the same request with its own types,
// both as encoded and as the server reads it (sent by client.send, and
// by openai-go from its own types).
func TestRequestBodiesAreOpenAIGos(t *testing.T) {
	models := []string{"gpt-4o-mini", "", "m<&>"}
	for i, wc := range wireCases(3000) {
		model := models[i%len(models)]
		want, err := wc.p.typedParams(model, wc.c, wc.mode).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := wc.p.requestBody(model, wc.c, wc.mode)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBody(got, want) {
			t.Fatalf("request %d:\ngot  %s\nwant %s", i, got, want)
		}
	}

	// On the wire: both requests sent by openai-go to a server that keeps
	// the bodies and the headers — the judge's through the client's Post,
	// the reference through ChatCompletionService.New with the same
	// options.
	type sent struct {
		method, path string
		header       http.Header
	}
	var mu sync.Mutex
	var bodies [][]byte
	var requests []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		requests = append(requests, sent{r.Method, r.URL.Path, r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	cl := newOpenAIProvider(testConfig(srv.URL), srv.Client(), "test-key", nil)
	chat := openai.NewChatCompletionService(cl.api.Options...)
	for i, wc := range wireCases(200) {
		body, err := wc.p.requestBody("gpt-4o-mini", wc.c, wc.mode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chat.New(context.Background(), wc.p.typedParams("gpt-4o-mini", wc.c, wc.mode)); err != nil {
			t.Fatal(err)
		}
		if err := cl.send(context.Background(), body); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(bodies) != 2 || !sameBody(bodies[1], bodies[0]) {
			t.Fatalf("request %d on the wire:\nopenai-go %s\njudge     %s", i, bodies[0], bodies[len(bodies)-1])
		}
		ref, ours := requests[0], requests[1]
		// Content-Length follows the body; the rest must be New's.
		ref.header.Del("Content-Length")
		ours.header.Del("Content-Length")
		if ref.method != ours.method || ref.path != ours.path || !reflect.DeepEqual(ref.header, ours.header) {
			t.Fatalf("request %d on the wire:\nopenai-go %s %s %v\njudge     %s %s %v", i, ref.method, ref.path, ref.header, ours.method, ours.path, ours.header)
		}
		bodies, requests = bodies[:0], requests[:0]
		mu.Unlock()
	}
}

// BenchmarkRequestBody is building the body of a G-Eval scoring request:
// openai-go's encoder of its own types, and the judge's.
func BenchmarkRequestBody(b *testing.B) {
	p := benchPlan()
	temp := 0.0
	c := call{temperature: &temp}
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		cputime.Report(b)
		for b.Loop() {
			if _, err := p.typedParams("gpt-4o-mini", c, modePrompt).MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("judge", func(b *testing.B) {
		b.ReportAllocs()
		cputime.Report(b)
		for b.Loop() {
			if _, err := p.requestBody("gpt-4o-mini", c, modePrompt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchPlan is a scoring request's plan: a system prompt and a 2.5 KB user
// prompt with characters encoding/json escapes, top_logprobs 20.
func benchPlan() *plan {
	prompt := string(bytes.Repeat([]byte("The actual output answers the input <correctly> & completely. "), 40))
	return &plan{req: abi.JudgeRequest{Messages: []abi.Message{{Role: "system", Content: "You are a strict evaluator."}, {Role: "user", Content: prompt}}},
		maxTokens: 512, topLogprobs: 20}
}

// FuzzRequestBody compares the judge's request body with openai-go's on
// any message text, role, model, temperature and schema name.
func FuzzRequestBody(f *testing.F) {
	f.Add("user", "Score it <1..10> & say why", "gpt-4o-mini", 0.7, "score", true, uint8(2))
	f.Add("", "\u2028\xff\x00", "", 1e21, "", false, uint8(0))
	f.Fuzz(func(t *testing.T, role, content, model string, temp float64, name string, strict bool, mode uint8) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) {
			t.Skip("neither encodes a non-finite number")
		}
		p := &plan{req: abi.JudgeRequest{Messages: []abi.Message{{Role: "system", Content: content}, {Role: role, Content: content}}},
			maxTokens: 64, topLogprobs: 20}
		if mode%3 != 2 {
			p.schema = &compiledSchema{canonical: []byte(`{"type":"object"}`)}
			p.schemaName, p.strict = schemaName(name), strict
		}
		c := call{temperature: &temp, n: int(mode % 4), extra: []abi.Message{{Role: "assistant", Content: content}}}
		sm := []schemaMode{modeJSONSchema, modeJSONObject, modePrompt}[mode%3]
		want, err := p.typedParams(model, c, sm).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.requestBody(model, c, sm)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBody(got, want) {
			t.Fatalf("\ngot  %s\nwant %s", got, want)
		}
	})
}
