package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
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
	// key addresses the cache; empty when the plan was resolved without
	// one (Forecast).
	key string
	// provider and endpoint are the judge's identity in the key, empty for
	// provider openai (keyMaterial).
	provider, endpoint string
	// inputTokens estimates the request's input (messages and schema, in
	// any mode) before extra messages: for the size checks and pacing.
	inputTokens int
}

// keyMaterial is hashed into the cache key: its JSON (keyOptions), with
// fields in a fixed order and the schema canonicalised, so equal requests
// hash equally. Its bytes are what encoding/json made of it before the
// judge moved to go-json-experiment (TestCacheKeysUnchanged pins them,
// TestKeyBytesAreEncodingJSONs compares them on generated requests), so
// a store keeps its hits; changing them needs a new cacheKeyVersion.
type keyMaterial struct {
	Version string `json:"v"`
	// Provider and Endpoint say which service answers (judgeconfig's
	// Identity); omitted for provider openai, whose keys predate them.
	Provider string        `json:"provider,omitempty"`
	Endpoint string        `json:"endpoint,omitempty"`
	Model    string        `json:"model"`
	Messages []abi.Message `json:"messages,format:emitnull"`
	// Schema is nil when the request has none.
	Schema            jsontext.Value `json:"schema,omitzero"`
	SchemaName        string         `json:"schema_name,omitempty"`
	SchemaMode        schemaMode     `json:"schema_mode,omitempty"`
	Strict            bool           `json:"strict,omitzero"`
	Temperature       *float64       `json:"temperature,omitzero"`
	MaxTokens         int            `json:"max_tokens,omitzero"`
	TopLogprobs       int            `json:"top_logprobs,omitzero"`
	ReturnTokens      bool           `json:"return_tokens,omitzero"`
	OmitTokens        bool           `json:"omit_tokens,omitzero"`
	Samples           int            `json:"samples,omitzero"`
	SampleTemperature float64        `json:"sample_temperature,omitzero"`
	Score             *keyScore      `json:"score,omitzero"`
	NumberTokens      string         `json:"number_tokens,omitempty"`
	// Sample tells apart a metric's repeated scorings of one request;
	// omitted for the first, so its key is the key it always had.
	Sample int `json:"sample,omitzero"`
}

// keyScore is an abi.ScoreSpec as the key writes it: the key's bytes do
// not follow abi's tags, and a field the spec gains must be added here
// (TestScoreSpecFieldsKnown).
type keyScore struct {
	Min               int      `json:"min"`
	Max               int      `json:"max"`
	Field             string   `json:"field,omitempty"`
	Samples           int      `json:"samples,omitzero"`
	SampleTemperature *float64 `json:"sample_temperature,omitzero"`
}

// keyOptions write the key material's strings as encoding/json did: HTML
// characters and U+2028, U+2029 escaped. Invalid UTF-8 becomes U+FFFD, as
// it did, but written as the character where encoding/json wrote the
// escape \ufffd: the key of a prompt with invalid UTF-8 is not the one it
// had (a miss, never a wrong hit: two prompts that share a key now are
// sent as the same text).
var keyOptions = json.JoinOptions(
	jsontext.EscapeForHTML(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
)

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

	p := &plan{req: req, temperature: j.cfg.Temperature, maxTokens: j.cfg.MaxTokens, sample: sample,
		provider: j.keyProvider, endpoint: j.keyEndpoint}
	if req.Temperature != nil {
		p.temperature = req.Temperature
	}
	if req.MaxTokens > 0 {
		p.maxTokens = req.MaxTokens
	}
	if p.maxTokens == 0 && j.cfg.Provider == judgeconfig.ProviderAnthropic {
		// The API requires a cap; planning with the one sent keeps the
		// size check, pacing, estimate and truncation message true.
		p.maxTokens = anthropicDefaultMaxTokens
	}

	if len(req.Schema) > 0 {
		cs, err := j.schemas.compile(req.Schema)
		if err != nil {
			return nil, j.errorf(abi.CodeABI, false, "request schema: %v", err)
		}
		p.schema = cs
		p.schemaName = schemaName(req.SchemaName)
		p.mode = j.schemaMode()
		if (j.cfg.Provider == judgeconfig.ProviderAnthropic || j.cfg.Provider == judgeconfig.ProviderBedrock) && !toolSchema(cs.canonical) {
			// A tool's input_schema is an object schema; any other
			// schema travels in the prompt.
			p.mode = modePrompt
		}
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
	key, err := p.cacheKey(j.cfg.Model, p.leansTokens())
	if err != nil {
		return nil, j.errorf(abi.CodeABI, false, "request cannot be encoded: %v", err)
	}
	p.key = key
	return p, nil
}

// keyEncodes reports whether cacheKey cannot fail for p: JSON refuses
// only the key material's floats when they are NaN or infinite (strings,
// ints and bools always encode; the schema is the canonical form
// canonicalJSON produced).
func (p *plan) keyEncodes() bool {
	if p.temperature != nil && !finite(*p.temperature) {
		return false
	}
	if !finite(p.sampleTemperature) {
		return false
	}
	if p.score != nil && p.score.SampleTemperature != nil && !finite(*p.score.SampleTemperature) {
		return false
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// wantsTokens says the response carries the reply's tokens.
func (p *plan) wantsTokens() bool { return p.returnTokens && !p.omitTokens }

// tokenNeed is how much of a reply's logprobs the request reads: all of
// them when the caller gets the tokens, else what scoring needs.
func (p *plan) tokenNeed() openaiwire.Need {
	if p.wantsTokens() {
		return openaiwire.NeedAll
	}
	return openaiwire.NeedScore
}

// leansTokens says the request is one that would return the tokens but
// omits them: its replies are recorded without tokens under a key of their
// own (OmitTokens in the key material), and a reply recorded with tokens
// for the same request without the flag answers it too (fullKey).
func (p *plan) leansTokens() bool { return p.returnTokens && p.omitTokens }

// cacheKey addresses p's reply in the cache; omitTokens marks a reply kept
// without its tokens (see leansTokens). It is the hex sha256 of p's key
// material as JSON.
func (p *plan) cacheKey(model string, omitTokens bool) (string, error) {
	b, err := p.keyJSON(model, omitTokens)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// keyJSON is what p's cache key hashes.
func (p *plan) keyJSON(model string, omitTokens bool) ([]byte, error) {
	km := keyMaterial{
		OmitTokens:   omitTokens,
		Version:      cacheKeyVersion,
		Provider:     p.provider,
		Endpoint:     p.endpoint,
		Model:        model,
		Messages:     p.req.Messages,
		SchemaMode:   p.mode,
		Strict:       p.strict,
		Temperature:  p.temperature,
		MaxTokens:    p.maxTokens,
		TopLogprobs:  p.topLogprobs,
		ReturnTokens: p.returnTokens,
		Samples:      p.samples,
		NumberTokens: p.numberTokens,
		Sample:       p.sample,
	}
	if p.sampleTemperature != 0 { // encoding/json omitted a -0 too
		km.SampleTemperature = p.sampleTemperature
	}
	if p.schema != nil {
		if len(p.schema.canonical) > 0 {
			km.Schema = p.schema.canonical
		}
		km.SchemaName = p.schemaName
	}
	if s := p.score; s != nil {
		km.Score = &keyScore{Min: s.Min, Max: s.Max, Field: s.Field, Samples: s.Samples, SampleTemperature: s.SampleTemperature}
	}
	return json.Marshal(&km, keyOptions)
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
