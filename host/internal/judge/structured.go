package judge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// schemaMode is how a request's schema reaches the model.
type schemaMode string

const (
	// modeJSONSchema: response_format json_schema; the server enforces it.
	modeJSONSchema schemaMode = "json_schema"
	// modeJSONObject: response_format json_object; the server guarantees
	// JSON, the schema travels in the prompt.
	modeJSONObject schemaMode = "json_object"
	// modePrompt: the schema travels in the prompt and the reply is parsed
	// tolerantly.
	modePrompt schemaMode = "prompt"
)

// schemaMode picks the strongest structured-output mode the judge has.
// Anthropic's is always a forced tool (json_schema's place: the API
// enforces the schema), which it has with every model.
func (j *Judge) schemaMode() schemaMode {
	switch {
	case j.cfg.Provider == judgeconfig.ProviderAnthropic, j.cfg.Provider == judgeconfig.ProviderGemini,
		j.cfg.Provider == judgeconfig.ProviderBedrock:
		return modeJSONSchema
	case j.cfg.SupportsJSONSchema:
		return modeJSONSchema
	case j.cfg.SupportsJSONMode:
		return modeJSONObject
	}
	return modePrompt
}

// modeRank orders the modes from the strongest (0) to the weakest.
func modeRank(m schemaMode) int32 {
	switch m {
	case modeJSONSchema:
		return 0
	case modeJSONObject:
		return 1
	}
	return 2
}

func modeOfRank(r int32) schemaMode {
	switch r {
	case 0:
		return modeJSONSchema
	case 1:
		return modeJSONObject
	}
	return modePrompt
}

// sendMode is the mode a request planned in mode goes out in: mode, or the
// weaker one the judge fell back to after the server rejected it.
func (j *Judge) sendMode(mode schemaMode) schemaMode {
	return modeOfRank(max(modeRank(mode), j.modeFloor.Load()))
}

// formatRejected says a rejected request (400, 422) was rejected for its
// structured-output mode. Servers say so in their own words; what they
// share is naming the parameter or the mode: OpenAI "'response_format' of
// type 'json_schema' is not supported with this model", llama.cpp
// "response_format type must be one of \"text\" or \"json_object\"", vLLM
// "The provided JSON schema contains features not supported by xgrammar",
// LiteLLM "does not support parameters: ['response_format']", pydantic
// servers "body.response_format.type: Input should be 'text' or
// 'json_object'".
func formatRejected(mode schemaMode, f *failure) bool {
	if f.kind != failRejected || mode == modePrompt {
		return false
	}
	d := strings.ToLower(f.detail)
	if strings.Contains(d, "response_format") || strings.Contains(d, "response format") {
		return true
	}
	if mode == modeJSONSchema {
		// Anthropic's structured output is a forced tool: a proxy or model
		// that takes no tools names them.
		return strings.Contains(d, "json_schema") || strings.Contains(d, "json schema") ||
			strings.Contains(d, "structured output") || strings.Contains(d, "guided_json") ||
			strings.Contains(d, "tool_choice") || strings.Contains(d, "input_schema") || strings.Contains(d, "tools") ||
			// Gemini's generationConfig, Bedrock's toolConfig.
			strings.Contains(d, "responsejsonschema") || strings.Contains(d, "response_json_schema") ||
			strings.Contains(d, "responseschema") || strings.Contains(d, "response_schema") ||
			strings.Contains(d, "toolconfig") || strings.Contains(d, "toolchoice")
	}
	return strings.Contains(d, "json_object") || strings.Contains(d, "json mode") || strings.Contains(d, "json_mode") ||
		strings.Contains(d, "responsemimetype") || strings.Contains(d, "response_mime_type")
}

// degrade makes the judge send the mode after from for the rest of its
// life, saying so once per step: the server rejected from, and every later
// request would be rejected the same way.
func (j *Judge) degrade(ctx context.Context, from schemaMode, f *failure) {
	next := modeRank(from) + 1
	for {
		cur := j.modeFloor.Load()
		if cur >= next {
			return // another request got there first and said so
		}
		if j.modeFloor.CompareAndSwap(cur, next) {
			break
		}
	}
	setting := "supports_json_schema: false"
	if from == modeJSONObject {
		setting = "supports_json_schema: false and supports_json_mode: false"
	}
	j.log.LogAttrs(ctx, slog.LevelWarn, "judge rejected its structured-output mode; using a weaker one for the rest of the run",
		slog.String("judge", j.cfg.Name), slog.String("model", j.cfg.Model),
		slog.String("rejected", string(from)), slog.String("now", string(modeOfRank(next))),
		slog.String("server_said", f.summary()), slog.String("hint", "set "+setting+" in the judge config to start there"))
}

// schemaInstruction introduces the schema when the server does not enforce it.
const schemaInstruction = "Respond with only a JSON object (no prose, no code fences) that satisfies this JSON Schema:\n"

// withSchemaInstruction appends the schema to the last user message rather
// than adding a message: some chat templates accept a system message only
// first, or two user messages in a row not at all.
func withSchemaInstruction(msgs []abi.Message, schema []byte) []abi.Message {
	out := make([]abi.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	text := schemaInstruction + string(schema)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			out[i].Content += "\n\n" + text
			return out
		}
	}
	return append(out, abi.Message{Role: "user", Content: text})
}

// repairInstruction follows the bad reply in the repair attempt.
func repairInstruction(problem error) string {
	return "Your previous reply could not be used: " + problem.Error() +
		"\nReply again with only a JSON object that satisfies the JSON Schema. No prose, no code fences."
}

// compiledSchema is a request schema ready to validate replies.
type compiledSchema struct {
	canonical []byte
	schema    *jsonschema.Schema
}

// maxCompiledSchemas bounds the compiled-schema memo. Schemas come from
// plugin code and configuration, so a run has few; the bound only guards
// against a guest that invents one per request.
const maxCompiledSchemas = 256

// schemaSet compiles request schemas once and remembers them by content:
// by the exact bytes (the common case, a plugin sending the same schema
// every time, costs one map lookup) and by canonical form.
type schemaSet struct {
	mu          sync.Mutex
	byRaw       map[string]*compiledSchema
	byCanonical map[[32]byte]*compiledSchema
}

func (s *schemaSet) compile(raw json.RawMessage) (*compiledSchema, error) {
	s.mu.Lock()
	cs, ok := s.byRaw[string(raw)]
	s.mu.Unlock()
	if ok {
		return cs, nil
	}
	doc, canonical, err := parseJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	sum := sha256.Sum256(canonical)
	s.mu.Lock()
	cs, ok = s.byCanonical[sum]
	s.mu.Unlock()
	if ok {
		s.remember(raw, sum, cs)
		return cs, nil
	}

	if _, isObject := doc.(map[string]any); !isObject {
		if _, isBool := doc.(bool); !isBool {
			return nil, errors.New("a JSON Schema is an object or a boolean")
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// The schema comes from plugin code: it must not make the host read
	// files or fetch URLs through $ref.
	c.UseLoader(noLoader{})
	const loc = "mem://anvil/request-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	cs = &compiledSchema{canonical: canonical, schema: compiled}
	s.remember(raw, sum, cs)
	return cs, nil
}

func (s *schemaSet) remember(raw []byte, sum [32]byte, cs *compiledSchema) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byRaw == nil {
		s.byRaw = map[string]*compiledSchema{}
		s.byCanonical = map[[32]byte]*compiledSchema{}
	}
	if len(s.byRaw) < maxCompiledSchemas {
		s.byRaw[string(raw)] = cs
	}
	if len(s.byCanonical) < maxCompiledSchemas {
		s.byCanonical[sum] = cs
	}
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// replyProblem is why a reply could not be used as structured output. Its
// text is shown to the model in the repair attempt, so it speaks to it.
type replyProblem struct {
	what string // "parse" or "schema"
	err  error
}

func (p *replyProblem) Error() string {
	if p.what == "schema" {
		return "the JSON does not satisfy the schema: " + p.err.Error()
	}
	return "it is not a JSON object: " + p.err.Error()
}

// structuredReply parses content tolerantly and validates it against the
// schema, returning the canonical JSON object.
func structuredReply(cs *compiledSchema, content string) (json.RawMessage, *replyProblem) {
	obj, problem := structuredObject(cs, content)
	return obj.canonical, problem
}

// structuredObject is structuredReply keeping what the parse found, so that
// the score is read from it rather than from the bytes again.
func structuredObject(cs *compiledSchema, content string) (replyObject, *replyProblem) {
	obj, err := parseObject(content)
	if err != nil {
		return replyObject{}, &replyProblem{what: "parse", err: err}
	}
	if err := cs.schema.Validate(obj.value); err != nil {
		return replyObject{}, &replyProblem{what: "schema", err: compactValidationError(err)}
	}
	return obj, nil
}

// compactValidationError keeps the validator's detail lines but drops its
// header (which names our internal schema URL, meaningless to the model).
func compactValidationError(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	lines := strings.Split(strings.TrimSpace(ve.Error()), "\n")
	var kept []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "jsonschema validation failed") {
			continue
		}
		kept = append(kept, strings.TrimPrefix(l, "- "))
	}
	if len(kept) == 0 {
		return err
	}
	return errors.New(strings.Join(kept, "; "))
}

// ParseTolerant extracts the JSON object a model wrote, forgiving what
// models commonly get wrong without a server-enforced format: prose or code
// fences around it (it takes the first '{' to the last '}') and trailing
// commas before '}' or ']'. It returns the object re-encoded canonically
// (sorted keys, compact), or an error saying what is wrong.
func ParseTolerant(content string) (json.RawMessage, error) {
	obj, err := parseObject(content)
	return obj.canonical, err
}
