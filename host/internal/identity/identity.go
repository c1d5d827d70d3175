package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// API is the wire protocol of an openai judge; APIOf names every provider's.
const API = "openai-chat-completions"

// APIOf is the wire protocol a judge of provider p is called with: an
// openai judge's is API, as before providers existed, so its identity (and
// digest) is unchanged.
func APIOf(p judgeconfig.Provider) string {
	switch p {
	case judgeconfig.ProviderAzure:
		return "azure-openai-chat-completions"
	case judgeconfig.ProviderAnthropic:
		return "anthropic-messages"
	case judgeconfig.ProviderGemini:
		return "gemini-generate-content"
	case judgeconfig.ProviderBedrock:
		return "bedrock-converse"
	}
	return API
}

// Where a judge's answers come from.
const (
	SourceAPI         = "api"
	SourceRecording   = "recording"
	SourceUnavailable = "unavailable"
)

// Judge is one judge as a run calls it.
type Judge struct {
	Name string `json:"name"`
	// API is the protocol it is called with.
	API   string `json:"api"`
	Model string `json:"model"`
	// BaseURL is the endpoint called as judgeconfig.Identity names it
	// (no user info, query or fragment; for Azure with its deployment and
	// api-version), empty for a judge that is not called (replayed or
	// unavailable).
	BaseURL string `json:"base_url,omitempty"`
	// Source is SourceAPI, SourceRecording (answers replayed from the
	// recording of digest Recording) or SourceUnavailable (no key: its
	// metrics are skipped).
	Source    string `json:"source"`
	Recording string `json:"recording,omitempty"`
	// The settings that change a request or the weighting of its reply.
	Temperature        *float64 `json:"temperature,omitempty"`
	MaxTokens          int      `json:"max_tokens,omitzero"`
	MaxInputTokens     int      `json:"max_input_tokens,omitzero"`
	SupportsLogprobs   bool     `json:"supports_logprobs,omitzero"`
	MaxTopLogprobs     int      `json:"max_top_logprobs,omitzero"`
	SupportsJSONSchema bool     `json:"supports_json_schema,omitzero"`
	JSONSchemaStrict   bool     `json:"json_schema_strict,omitzero"`
	SupportsJSONMode   bool     `json:"supports_json_mode,omitzero"`
	SupportsN          bool     `json:"supports_n,omitzero"`
	// NumberTokens is the resolved rule (whole or digits), never auto.
	NumberTokens string `json:"number_tokens"`
	// EmbeddingModel answers the judge's embeddings (similarity scores).
	EmbeddingModel string `json:"embedding_model,omitempty"`
}

// OfJudge is the identity of judge cfg as resolved (defaults and
// environment fallbacks applied), answering from source; recording is
// the digest of the recording it replays (SourceRecording only).
func OfJudge(cfg judgeconfig.Config, source, recording string) Judge {
	j := Judge{
		Name: cfg.Name, API: APIOf(cfg.Provider), Model: cfg.Model, BaseURL: cfg.Identity().Endpoint, Source: source,
		MaxTokens: cfg.MaxTokens, MaxInputTokens: cfg.MaxInputTokens,
		SupportsLogprobs: cfg.SupportsLogprobs, MaxTopLogprobs: cfg.MaxTopLogprobs,
		SupportsJSONSchema: cfg.SupportsJSONSchema, JSONSchemaStrict: cfg.JSONSchemaStrict,
		SupportsJSONMode: cfg.SupportsJSONMode, SupportsN: cfg.SupportsN,
		NumberTokens:   string(cfg.NumberTokens.Resolve(cfg.Model)),
		EmbeddingModel: cfg.EmbeddingModel,
	}
	if cfg.Temperature != nil {
		t := *cfg.Temperature
		j.Temperature = &t
	}
	switch source {
	case SourceRecording:
		j.Recording = recording
		// Not called: the recording answers, keyed by model and request,
		// wherever this environment would send them.
		j.BaseURL = ""
	case SourceUnavailable:
		j.BaseURL = ""
	}
	return j
}

// field is one named value of an identity, as compared and digested.
type field struct{ name, value string }

func (j Judge) fields() []field {
	temp := "server default"
	if j.Temperature != nil {
		temp = strconv.FormatFloat(*j.Temperature, 'g', -1, 64)
	}
	b := strconv.FormatBool
	return []field{
		{"api", j.API}, {"model", j.Model}, {"base_url", j.BaseURL}, {"source", j.Source}, {"recording", j.Recording},
		{"temperature", temp}, {"max_tokens", strconv.Itoa(j.MaxTokens)}, {"max_input_tokens", strconv.Itoa(j.MaxInputTokens)},
		{"supports_logprobs", b(j.SupportsLogprobs)}, {"max_top_logprobs", strconv.Itoa(j.MaxTopLogprobs)},
		{"supports_json_schema", b(j.SupportsJSONSchema)}, {"json_schema_strict", b(j.JSONSchemaStrict)},
		{"supports_json_mode", b(j.SupportsJSONMode)}, {"supports_n", b(j.SupportsN)},
		{"number_tokens", j.NumberTokens},
		{"embedding_model", j.EmbeddingModel},
	}
}

// digestOmitsEmpty are fields added after identities were first recorded:
// left out of the digest when empty, so a judge without them keeps the
// digest it had (and a run recorded before them resumes).
var digestOmitsEmpty = map[string]bool{"embedding_model": true}

// Kind is a first-party plugin linked into the host: its name, version
// and the digest of the source it was compiled from.
type Kind struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

func (k Kind) fields() []field {
	return []field{{"version", k.Version}, {"digest", k.Digest}}
}

// Run is what a run's scores depend on beyond its config file.
type Run struct {
	// Digest is over Judges and Kinds (see New): every results line
	// carries it.
	Digest string  `json:"digest"`
	Judges []Judge `json:"judges"`
	Kinds  []Kind  `json:"kinds"`
}

// New is the identity of a run with these judges and kinds, sorted by
// name, with its digest.
func New(judges []Judge, kinds []Kind) Run {
	r := Run{Judges: slices.Clone(judges), Kinds: slices.Clone(kinds)}
	slices.SortFunc(r.Judges, func(a, b Judge) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(r.Kinds, func(a, b Kind) int { return strings.Compare(a.Name, b.Name) })
	if r.Judges == nil {
		r.Judges = []Judge{}
	}
	if r.Kinds == nil {
		r.Kinds = []Kind{}
	}
	r.Digest = r.digest()
	return r
}

// digest hashes the judges and kinds field by field, each value
// length-prefixed, so no two identities share an encoding.
func (r Run) digest() string {
	h := sha256.New()
	put := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	for _, j := range r.Judges {
		put("judge")
		put(j.Name)
		for _, f := range j.fields() {
			if f.value == "" && digestOmitsEmpty[f.name] {
				continue
			}
			put(f.name)
			put(f.value)
		}
	}
	for _, k := range r.Kinds {
		put("kind")
		put(k.Name)
		for _, f := range k.fields() {
			put(f.name)
			put(f.value)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Check reports an identity a peer sent whose digest is not its content's.
func (r Run) Check() error {
	if d := New(r.Judges, r.Kinds).Digest; d != r.Digest {
		return fmt.Errorf("identity digest %s does not match its judges and kinds (%s)", r.Digest, d)
	}
	return nil
}

// Judge returns the run's judge named name.
func (r Run) Judge(name string) (Judge, bool) {
	for _, j := range r.Judges {
		if j.Name == name {
			return j, true
		}
	}
	return Judge{}, false
}

// Diff names every difference between a and b, labelled an and bn
// ("coordinator", "worker"): "judge default model: coordinator
// gpt-4o-mini, worker other". Nil when they are the same.
func Diff(a, b Run, an, bn string) []string {
	var out []string
	out = append(out, diffNamed("judge", a.Judges, b.Judges, Judge.fields, func(j Judge) string { return j.Name }, an, bn)...)
	out = append(out, diffNamed("built-in kind", a.Kinds, b.Kinds, Kind.fields, func(k Kind) string { return k.Name }, an, bn)...)
	return out
}

func diffNamed[T any](what string, as, bs []T, fields func(T) []field, name func(T) string, an, bn string) []string {
	var out []string
	find := func(list []T, n string) (T, bool) {
		for _, v := range list {
			if name(v) == n {
				return v, true
			}
		}
		var zero T
		return zero, false
	}
	for _, a := range as {
		b, ok := find(bs, name(a))
		if !ok {
			out = append(out, fmt.Sprintf("%s %s: only %s has it", what, name(a), an))
			continue
		}
		fb := fields(b)
		for i, f := range fields(a) {
			if f.value != fb[i].value {
				out = append(out, fmt.Sprintf("%s %s %s: %s %s, %s %s", what, name(a), f.name, an, show(f.value), bn, show(fb[i].value)))
			}
		}
	}
	for _, b := range bs {
		if _, ok := find(as, name(b)); !ok {
			out = append(out, fmt.Sprintf("%s %s: only %s has it", what, name(b), bn))
		}
	}
	return out
}

func show(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// CaseDigest identifies what a test case asks and expects — its id,
// input, expected output, context and expected tools; for a conversation
// also its user and system turns, scenario, expected outcome and role —
// and not what the system under test answered (actual output, retrieval
// context, tools called, assistant and tool turns) nor free-form extras:
// two runs scored the same question on a case only when its digests
// agree, whatever their answers.
func CaseDigest(c *abi.TestCase) string {
	h := sha256.New()
	var n [20]byte
	count := func(k int) {
		h.Write(strconv.AppendInt(n[:0], int64(k), 10))
	}
	put := func(s string) {
		count(len(s))
		h.Write([]byte{':'})
		h.Write([]byte(s))
		h.Write([]byte{';'})
	}
	put(c.ID)
	put(c.Input)
	put(c.ExpectedOutput)
	count(len(c.Context))
	h.Write([]byte{';'})
	for _, s := range c.Context {
		put(s)
	}
	count(len(c.ExpectedTools))
	h.Write([]byte{';'})
	for _, t := range c.ExpectedTools {
		put(t.Name)
		put(compactJSON(t.Arguments))
		put(compactJSON(t.Output))
	}
	// A conversation asks through its user and system turns, its scenario,
	// expected outcome and role; its assistant and tool turns are the
	// answers. Hashed only for a conversational case, so a single-turn
	// case's digest is what it was before conversations existed.
	if c.Conversational() {
		h.Write([]byte("turns;"))
		for _, t := range c.Turns {
			if t.Role == abi.RoleUser || t.Role == abi.RoleSystem {
				put(t.Role)
				put(t.Content)
			}
		}
		put(c.Scenario)
		put(c.ExpectedOutcome)
		put(c.ChatbotRole)
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// compactJSON is raw without insignificant whitespace, so that a value's
// layout in the dataset file does not change the digest.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
