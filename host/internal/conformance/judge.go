package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/judgetest"
)

// ScriptedJudge is the judge a conformance run (and `plugin call --judge
// scripted`) answers a plugin's judge requests with: a judgetest server on
// loopback, reached through the host's real judge client, whose replies
// are built from each request's JSON Schema — the smallest value the
// schema accepts, integers in the middle of their range — so any kind
// that asks for structured output gets a reply it can decode; embed
// requests get judgetest's vectors (from each text's SHA-256). No model
// is involved and no key is needed.
type ScriptedJudge struct {
	server *judgetest.Server
	judge  *judge.Judge
}

// StartScriptedJudge starts the server and a judge client pointed at it.
func StartScriptedJudge() (*ScriptedJudge, error) {
	s := judgetest.NewServer(judgetest.WithDefault(judgetest.ReplyFunc(schemaReply)))
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	j, err := judge.New(judge.Config{
		Name: "conformance", BaseURL: url, Model: "conformance-judge", EmbeddingModel: "conformance-embedding",
		SupportsJSONSchema: true, SupportsLogprobs: true, SupportsN: true,
		MaxRetries: -1, Timeout: judge.Duration(30 * time.Second),
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &ScriptedJudge{server: s, judge: j}, nil
}

// Close stops the server.
func (s *ScriptedJudge) Close() { s.server.Close() }

// Calls is the number of HTTP completions the server answered.
func (s *ScriptedJudge) Calls() int { return s.server.Calls() }

// scoreHint is how a request that asks the host for a score but the judge
// for plain text (the ABI allows a score without a schema) tells the
// scripted server, which sees only the HTTP request, what integer to
// write: the middle of the score's range.
var scoreHint = regexp.MustCompile(`\[conformance: answer (-?[0-9]+)\]`)

// withScoreHint adds scoreHint's message to a request with a score and no
// schema; other requests go as the plugin made them.
func withScoreHint(req abi.JudgeRequest) abi.JudgeRequest {
	if req.Score == nil || len(req.Schema) > 0 {
		return req
	}
	mid := req.Score.Min + (req.Score.Max-req.Score.Min)/2
	msgs := append([]abi.Message(nil), req.Messages...)
	req.Messages = append(msgs, abi.Message{Role: "system", Content: fmt.Sprintf("[conformance: answer %d]", mid)})
	return req
}

// schemaReply answers a request with a value its response schema accepts,
// or plain text when it asks for none (with the score a scoreHint asks for).
func schemaReply(req judgetest.RecordedRequest) judgetest.Reply {
	rf := req.ResponseFormat
	if rf == nil || rf.Type == "" || rf.Type == "text" {
		for _, m := range req.Messages {
			if h := scoreHint.FindStringSubmatch(m.Content); h != nil {
				return judgetest.Reply{Content: "conformance reply. Score: " + h[1]}
			}
		}
	}
	switch {
	case rf != nil && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0:
		var schema any
		if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err == nil {
			b, _ := json.Marshal(instanceOf(schema, 0))
			return judgetest.Reply{Content: string(b)}
		}
	case rf != nil && rf.Type == "json_object":
		return judgetest.Reply{Content: `{"reason": "conformance reply", "score": 5}`}
	}
	return judgetest.Reply{Content: "conformance reply"}
}

// instanceOf builds a value the JSON Schema s accepts (the subset judge
// schemas use: type, properties, items, enum, const, minimum/maximum,
// minItems, minLength, anyOf/oneOf).
func instanceOf(s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 16 {
		return nil
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if a, ok := m[k].([]any); ok && len(a) > 0 {
			return instanceOf(a[0], depth+1)
		}
	}
	typ, _ := m["type"].(string)
	if ts, ok := m["type"].([]any); ok {
		for _, t := range ts {
			if t, _ := t.(string); t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := m["properties"]; ok {
			typ = "object"
		}
	}
	num := func(key string) (float64, bool) { f, ok := m[key].(float64); return f, ok }
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for name, p := range props {
			out[name] = instanceOf(p, depth+1)
		}
		return out
	case "array":
		n := 1
		if f, ok := num("minItems"); ok && int(f) > n {
			n = int(f)
		}
		if f, ok := num("maxItems"); ok && int(f) < n {
			n = int(f)
		}
		items := make([]any, n)
		for i := range items {
			items[i] = instanceOf(m["items"], depth+1)
		}
		return items
	case "integer", "number":
		lo, hasLo := num("minimum")
		hi, hasHi := num("maximum")
		v := 0.0
		switch {
		case hasLo && hasHi:
			v = lo + (hi-lo)/2
		case hasLo:
			v = lo
		case hasHi && hi < 0:
			v = hi
		}
		if typ == "integer" {
			return int64(v)
		}
		return v
	case "boolean":
		return true
	case "null":
		return nil
	default:
		str := "conformance"
		if f, ok := num("minLength"); ok {
			for len(str) < int(f) {
				str += " conformance"
			}
		}
		return str
	}
}

// services implements plugin.Services for a conformance run: judge
// requests go to the scripted judge (none when it is nil), every batch
// is recorded, logs are counted.
type services struct {
	judge *ScriptedJudge

	mu      sync.Mutex
	batches [][]abi.JudgeRequest
	embeds  []abi.EmbedRequest
	logs    int
	// onJudge, when set, runs before a batch is answered (the instance
	// check cancels the caller's context there).
	onJudge func(ctx context.Context)
}

func (s *services) Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	s.mu.Lock()
	s.batches = append(s.batches, append([]abi.JudgeRequest(nil), reqs...))
	hook := s.onJudge
	s.mu.Unlock()
	if hook != nil {
		hook(ctx)
	}
	out := make([]abi.JudgeResponse, len(reqs))
	if s.judge == nil {
		for i := range out {
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "no judge in this conformance run")}
		}
		return out
	}
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out[i] = s.judge.judge.Do(ctx, withScoreHint(reqs[i]))
		}(i)
	}
	wg.Wait()
	return out
}

// Embed implements plugin.EmbedServices through the scripted judge's
// embeddings call.
func (s *services) Embed(ctx context.Context, req abi.EmbedRequest) abi.EmbedResult {
	s.mu.Lock()
	s.embeds = append(s.embeds, req)
	hook := s.onJudge
	s.mu.Unlock()
	if hook != nil {
		hook(ctx)
	}
	if s.judge == nil {
		return abi.EmbedResult{Vectors: [][]float64{}, Error: abi.Errorf(abi.CodeJudge, "no judge in this conformance run")}
	}
	e := s.judge.judge.Embed(ctx, req.Texts)
	if e.Vectors == nil {
		e.Vectors = [][]float64{}
	}
	return abi.EmbedResult{Vectors: e.Vectors, Usage: e.Usage, Error: e.Error}
}

func (s *services) Log(context.Context, string, abi.LogRecord) {
	s.mu.Lock()
	s.logs++
	s.mu.Unlock()
}

// requests counts the judge requests the services received; an embed
// request is a batch of one request, as the guard counts it.
func (s *services) requests() (batches, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		requests += len(b)
	}
	return len(s.batches) + len(s.embeds), requests + len(s.embeds)
}

// embedRequests counts the embed requests the services received.
func (s *services) embedRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.embeds)
}

var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkBatchShapes applies what a judge request must look like beyond
// what the host already refuses: at least one message, known roles,
// non-empty contents, a schema that is a JSON object and a schema name an
// OpenAI-compatible server accepts.
func (s *services) checkBatchShapes() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for bi, b := range s.batches {
		if len(b) == 0 {
			return fmt.Errorf("batch %d is empty", bi)
		}
		for ri, r := range b {
			at := fmt.Sprintf("batch %d request %d", bi, ri)
			if len(r.Messages) == 0 {
				return fmt.Errorf("%s has no messages", at)
			}
			for mi, m := range r.Messages {
				switch m.Role {
				case "system", "user", "assistant":
				default:
					return fmt.Errorf("%s message %d has role %q; want system, user or assistant", at, mi, m.Role)
				}
				if m.Content == "" {
					return fmt.Errorf("%s message %d is empty", at, mi)
				}
			}
			if len(r.Schema) > 0 {
				var obj map[string]any
				if err := json.Unmarshal(r.Schema, &obj); err != nil {
					return fmt.Errorf("%s schema is not a JSON object: %v", at, err)
				}
				if r.SchemaName != "" && !schemaName.MatchString(r.SchemaName) {
					return fmt.Errorf("%s schema_name %q: want [a-zA-Z0-9_-]{1,64}", at, r.SchemaName)
				}
			}
		}
	}
	for ei, e := range s.embeds {
		for ti, t := range e.Texts {
			if t == "" {
				return fmt.Errorf("embed request %d text %d is empty (providers refuse an empty text)", ei, ti)
			}
		}
	}
	return nil
}

// Services returns host services whose judge is j (nil: every judge
// and embed request is answered with judge_error), for `plugin call`.
func Services(j *ScriptedJudge) interface {
	Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse
	Embed(ctx context.Context, req abi.EmbedRequest) abi.EmbedResult
	Log(ctx context.Context, pluginID string, rec abi.LogRecord)
} {
	return &services{judge: j}
}
