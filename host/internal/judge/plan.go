package judge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonw"
	"github.com/agentanvil/anvil/score"
)

// cacheKeyVersion changes whenever what a cached value means changes, so an
// old store is missed rather than misread.
const cacheKeyVersion = "anvil-judge-v1"

// defaultSampleTemperature is used for score sampling when the spec sets none.
const defaultSampleTemperature = 1.0

// plan is a request resolved against the judge's configuration: everything
// that decides what goes on the wire and what comes back, and therefore
// everything the cache key covers.
type plan struct {
	req abi.JudgeRequest
	// schema is nil when the request has none.
	schema *compiledSchema
	// schemaName is sent with json_schema mode.
	schemaName string
	// mode is the configured structured-output mode. What is sent may be
	// weaker once the server has rejected it (Judge.sendMode); the cache
	// key keeps the configured mode, so a reply obtained in a weaker mode
	// answers the same request in later runs.
	mode schemaMode
	// strict sends strict: true with json_schema.
	strict bool
	// temperature and maxTokens as sent (nil / 0: not sent).
	temperature *float64
	maxTokens   int
	// topLogprobs > 0 requests logprobs with that many alternatives.
	topLogprobs int
	// returnTokens says the caller asked for the tokens (not only the
	// score); the cache key holds it. omitTokens says it then declared it
	// does not read them (abi.JudgeRequest.OmitTokens): they are neither
	// decoded in full nor returned (see leansTokens for the cache).
	returnTokens bool
	omitTokens   bool
	// score is the request's spec with defaults applied, nil when none.
	score *abi.ScoreSpec
	// samples > 1 selects the sampling fallback, at sampleTemperature.
	samples           int
	sampleTemperature float64
	// sample is the index of a metric's repeated scoring of the same
	// request (a metric's samples: N); 0 for the first, and it keeps the
	// key a request without samples has.
	sample int
	// numberTokens is the judge's number_tokens as the cache key records it
	// (numberTokensKey), for a logprob-weighted score only.
	numberTokens string
	// key addresses the cache.
	key string
	// wire is the escaped text the key and the bodies share, nil when the
	// plan was resolved without a key (Forecast).
	wire *wireText
	// inputTokens estimates the request's input (messages and schema, in
	// any mode) before extra messages: for the size checks and pacing.
	inputTokens int
}

// keyMaterial is hashed into the cache key. Field order is fixed by the
// struct, and the schema is canonicalised, so equal requests hash equally.
// cacheKey writes json.Marshal's bytes for it by hand; the struct is what
// they must match (FuzzCacheKey, TestEncodedTypesKnown) and what encodes
// the key when encoding/json would refuse it.
type keyMaterial struct {
	Version           string          `json:"v"`
	Model             string          `json:"model"`
	Messages          []abi.Message   `json:"messages"`
	Schema            json.RawMessage `json:"schema,omitempty"`
	SchemaName        string          `json:"schema_name,omitempty"`
	SchemaMode        schemaMode      `json:"schema_mode,omitempty"`
	Strict            bool            `json:"strict,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	MaxTokens         int             `json:"max_tokens,omitempty"`
	TopLogprobs       int             `json:"top_logprobs,omitempty"`
	ReturnTokens      bool            `json:"return_tokens,omitempty"`
	OmitTokens        bool            `json:"omit_tokens,omitempty"`
	Samples           int             `json:"samples,omitempty"`
	SampleTemperature float64         `json:"sample_temperature,omitempty"`
	Score             *abi.ScoreSpec  `json:"score,omitempty"`
	NumberTokens      string          `json:"number_tokens,omitempty"`
	// Sample tells apart a metric's repeated scorings of one request;
	// omitted for the first, so its key is the key it always had.
	Sample int `json:"sample,omitempty"`
}

// plan resolves req as the sample-th scoring of it (see DoSample), or
// explains why it cannot be sent.
func (j *Judge) plan(req abi.JudgeRequest, sample int) (*plan, *abi.Error) {
	return j.resolve(req, sample, true)
}

// resolve is plan; without withKey it leaves the cache key out when
// computing it cannot fail (keyEncodes), for Forecast, which reads
// everything but the key: encoding the key material (the whole prompt)
// and hashing it was most of planning, done again by the call itself.
// When the key could fail to encode it is computed, so Forecast refuses
// what Do would, with the same error.
func (j *Judge) resolve(req abi.JudgeRequest, sample int, withKey bool) (*plan, *abi.Error) {
	if sample < 0 {
		return nil, j.errorf(abi.CodeABI, false, "sample index %d is negative", sample)
	}
	if req.Judge != "" && req.Judge != j.cfg.Name {
		return nil, j.errorf(abi.CodeJudge, false, "request names judge %q but was routed to this judge", req.Judge)
	}
	if len(req.Messages) == 0 {
		return nil, j.errorf(abi.CodeABI, false, "request has no messages")
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return nil, j.errorf(abi.CodeABI, false, "message %d has role %q; want system, user or assistant", i, m.Role)
		}
	}
	if req.TopLogprobs < 0 || req.MaxTokens < 0 {
		return nil, j.errorf(abi.CodeABI, false, "top_logprobs and max_tokens must not be negative")
	}

	p := &plan{req: req, temperature: j.cfg.Temperature, maxTokens: j.cfg.MaxTokens, sample: sample}
	if req.Temperature != nil {
		p.temperature = req.Temperature
	}
	if req.MaxTokens > 0 {
		p.maxTokens = req.MaxTokens
	}

	if len(req.Schema) > 0 {
		cs, err := j.schemas.compile(req.Schema)
		if err != nil {
			return nil, j.errorf(abi.CodeABI, false, "request schema: %v", err)
		}
		p.schema = cs
		p.schemaName = schemaName(req.SchemaName)
		p.mode = j.schemaMode()
		p.strict = p.mode == modeJSONSchema && j.cfg.JSONSchemaStrict
	}

	if req.Score != nil {
		spec := *req.Score
		if spec.Max <= spec.Min {
			e := j.errorf(abi.CodeInvalidConfig, false, "score range [%d,%d] is empty or inverted", spec.Min, spec.Max)
			e.Field = "score"
			return nil, e
		}
		if spec.Field == "" {
			spec.Field = score.DefaultField
		}
		p.score = &spec
		if !j.cfg.SupportsLogprobs && spec.Samples > 1 {
			p.samples = spec.Samples
			p.sampleTemperature = defaultSampleTemperature
			if spec.SampleTemperature != nil {
				p.sampleTemperature = *spec.SampleTemperature
			}
		}
	}

	if j.cfg.SupportsLogprobs {
		want := req.TopLogprobs
		if want == 0 && p.score != nil {
			// Weighting needs the alternatives at the score position even
			// when the caller did not ask to see the tokens.
			want = j.cfg.MaxTopLogprobs
		}
		p.topLogprobs = min(want, j.cfg.MaxTopLogprobs)
		p.returnTokens = req.TopLogprobs > 0
		p.omitTokens = req.OmitTokens
	}

	if p.score != nil && p.topLogprobs > 0 {
		p.numberTokens = j.numberTokensKey()
	}

	p.inputTokens = estimateMessages(req.Messages)
	if p.schema != nil {
		p.inputTokens += estimateSchema(p.schema.canonical)
	}
	if !withKey && p.keyEncodes() {
		return p, nil
	}
	p.wire = p.newWireText()
	key, err := p.cacheKey(j.cfg.Model, p.leansTokens())
	if err != nil {
		return nil, j.errorf(abi.CodeABI, false, "request cannot be encoded: %v", err)
	}
	p.key = key
	return p, nil
}

// keyEncodes reports whether cacheKey cannot fail for p: encoding/json
// refuses only the key material's floats when they are NaN or infinite
// (strings, ints and bools always encode; the schema is the canonical
// form canonicalJSON produced).
func (p *plan) keyEncodes() bool {
	if p.temperature != nil && !jsonw.Finite(*p.temperature) {
		return false
	}
	if !jsonw.Finite(p.sampleTemperature) {
		return false
	}
	if p.score != nil && p.score.SampleTemperature != nil && !jsonw.Finite(*p.score.SampleTemperature) {
		return false
	}
	return true
}

// wantsTokens says the response carries the reply's tokens.
func (p *plan) wantsTokens() bool { return p.returnTokens && !p.omitTokens }

// tokenNeed is how much of a reply's logprobs the request reads: all of
// them when the caller gets the tokens, else what scoring needs.
func (p *plan) tokenNeed() tokenNeed {
	if p.wantsTokens() {
		return needAllTokens
	}
	return needScoreTokens
}

// leansTokens says the request is one that would return the tokens but
// omits them: its replies are recorded without tokens under a key of their
// own (OmitTokens in the key material), and a reply recorded with tokens
// for the same request without the flag answers it too (fullKey).
func (p *plan) leansTokens() bool { return p.returnTokens && p.omitTokens }

// cacheKey addresses p's reply in the cache; omitTokens marks a reply kept
// without its tokens (see leansTokens). It hashes json.Marshal's bytes for
// keyMaterial, written by hand; what encoding/json refuses (keyEncodes, a
// schema that is not JSON) is left to it, for its error.
func (p *plan) cacheKey(model string, omitTokens bool) (string, error) {
	if !p.keyEncodes() {
		return p.marshalKey(model, omitTokens)
	}
	var schema []byte
	if p.schema != nil {
		var ok bool
		if schema, ok = p.schemaForm(); !ok {
			return p.marshalKey(model, omitTokens)
		}
	}
	// Most keys fit the stack buffer: a G-Eval prompt is ~2.5 KB.
	b := p.appendKeyMaterial(make([]byte, 0, 4096), schema, model, omitTokens)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// appendKeyMaterial appends json.Marshal's bytes for p's keyMaterial,
// schema being p's schemaForm; the caller checks that it encodes.
func (p *plan) appendKeyMaterial(b, schema []byte, model string, omitTokens bool) []byte {
	b = append(b, `{"v":`...)
	b = jsonw.AppendString(b, cacheKeyVersion)
	b = append(b, `,"model":`...)
	b = jsonw.AppendString(b, model)
	b = append(b, `,"messages":`...)
	if p.req.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range p.req.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonw.AppendString(b, m.Role)
			b = append(b, `,"content":`...)
			b = p.appendContent(b, i, m.Content)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if p.schema != nil {
		if len(p.schema.canonical) > 0 {
			b = append(b, `,"schema":`...)
			b = append(b, schema...)
		}
		if p.schemaName != "" {
			b = append(b, `,"schema_name":`...)
			b = jsonw.AppendString(b, p.schemaName)
		}
	}
	if p.mode != "" {
		b = append(b, `,"schema_mode":`...)
		b = jsonw.AppendString(b, string(p.mode))
	}
	if p.strict {
		b = append(b, `,"strict":true`...)
	}
	if p.temperature != nil {
		b = append(b, `,"temperature":`...)
		b = jsonw.AppendFloat(b, *p.temperature)
	}
	b = appendIntMember(b, `,"max_tokens":`, p.maxTokens)
	b = appendIntMember(b, `,"top_logprobs":`, p.topLogprobs)
	if p.returnTokens {
		b = append(b, `,"return_tokens":true`...)
	}
	if omitTokens {
		b = append(b, `,"omit_tokens":true`...)
	}
	b = appendIntMember(b, `,"samples":`, p.samples)
	if p.sampleTemperature != 0 {
		b = append(b, `,"sample_temperature":`...)
		b = jsonw.AppendFloat(b, p.sampleTemperature)
	}
	if p.score != nil {
		b = append(b, `,"score":`...)
		b = appendScoreSpec(b, p.score)
	}
	if p.numberTokens != "" {
		b = append(b, `,"number_tokens":`...)
		b = jsonw.AppendString(b, p.numberTokens)
	}
	b = appendIntMember(b, `,"sample":`, p.sample)
	return append(b, '}')
}

// appendIntMember appends an int member tagged omitempty: nothing for 0.
func appendIntMember(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), int64(v), 10)
}

// appendScoreSpec appends s as json.Marshal writes an abi.ScoreSpec
// (TestScoreSpecFieldsKnown fails when the type gains a field this does
// not write); the caller checks its temperature is finite.
func appendScoreSpec(b []byte, s *abi.ScoreSpec) []byte {
	b = append(b, `{"min":`...)
	b = strconv.AppendInt(b, int64(s.Min), 10)
	b = append(b, `,"max":`...)
	b = strconv.AppendInt(b, int64(s.Max), 10)
	if s.Field != "" {
		b = append(b, `,"field":`...)
		b = jsonw.AppendString(b, s.Field)
	}
	b = appendIntMember(b, `,"samples":`, s.Samples)
	if s.SampleTemperature != nil {
		b = append(b, `,"sample_temperature":`...)
		b = jsonw.AppendFloat(b, *s.SampleTemperature)
	}
	return append(b, '}')
}

// marshalKey is cacheKey by encoding/json, from keyMaterial: the reference
// the hand-written encoder matches (FuzzCacheKey), and the encoder of what
// it leaves to encoding/json.
func (p *plan) marshalKey(model string, omitTokens bool) (string, error) {
	b, err := json.Marshal(p.keyMaterial(model, omitTokens))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// keyMaterial is what p's cache key hashes.
func (p *plan) keyMaterial(model string, omitTokens bool) keyMaterial {
	km := keyMaterial{
		OmitTokens:        omitTokens,
		Version:           cacheKeyVersion,
		Model:             model,
		Messages:          p.req.Messages,
		SchemaMode:        p.mode,
		Strict:            p.strict,
		Temperature:       p.temperature,
		MaxTokens:         p.maxTokens,
		TopLogprobs:       p.topLogprobs,
		ReturnTokens:      p.returnTokens,
		Samples:           p.samples,
		SampleTemperature: p.sampleTemperature,
		Score:             p.score,
		NumberTokens:      p.numberTokens,
		Sample:            p.sample,
	}
	if p.schema != nil {
		km.Schema = p.schema.canonical
		km.SchemaName = p.schemaName
	}
	return km
}

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant whitespace, keeping numbers exactly as written.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// schemaName makes a provider-acceptable response_format name:
// [a-zA-Z0-9_-], at most 64 characters.
func schemaName(s string) string {
	if acceptableSchemaName(s) {
		return s // the common case, a plugin's fixed name: no copy
	}
	return rebuildSchemaName(s)
}

// rebuildSchemaName is schemaName's work for a name it must change: each
// other rune becomes '_', and the result stops at 64 bytes.
func rebuildSchemaName(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), 64))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() == 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}

// acceptableSchemaName reports whether s is already a name schemaName
// keeps as it is.
func acceptableSchemaName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
