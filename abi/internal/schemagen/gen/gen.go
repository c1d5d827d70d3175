// Package gen reflects the JSON Schemas (draft 2020-12) of the ABI v1
// messages from the Go types in package abi.
//
// Invariants: generation is a pure function of the abi types and the tables
// in this package, so the committed abi/v1/schema/*.json can be checked for
// staleness by regenerating them in memory; every object and every property
// of every schema carries a description written for a non-Go guest author,
// and generation fails when an abi type gains a field this package does not
// describe, or when a description names a field that no longer exists.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/invopop/jsonschema"
)

// Dir is where the schemas are committed, relative to the module root
// (slash-separated). The schemas are versioned with the ABI: a major
// version has its own directory, next to its specification
// (abi/v1/README.md), and a v2 would live in abi/v2/schema/ beside it.
const Dir = "abi/v1/schema"

// BaseID is the URI prefix of every schema's $id: the raw URL of Dir on
// the main branch, so an $id names the ABI major version and resolves to
// the committed file itself.
const BaseID = "https://raw.githubusercontent.com/agentanvil/anvil/main/" + Dir + "/"

// Message is one top-level ABI message: the name of its schema file
// (without ".json") and its Go type.
type Message struct {
	Name string
	Type reflect.Type
}

// Messages lists every message that has its own schema file, in the order
// the specification introduces them.
var Messages = []Message{
	{"descriptor", reflect.TypeFor[abi.Descriptor]()},
	{"prepare_request", reflect.TypeFor[abi.PrepareRequest]()},
	{"prepare_result", reflect.TypeFor[abi.PrepareResult]()},
	{"measure_request", reflect.TypeFor[abi.MeasureRequest]()},
	{"measure_result", reflect.TypeFor[abi.MeasureResult]()},
	{"node_request", reflect.TypeFor[abi.NodeRequest]()},
	{"node_result", reflect.TypeFor[abi.NodeResult]()},
	{"judge_batch", reflect.TypeFor[abi.JudgeBatch]()},
	{"judge_batch_result", reflect.TypeFor[abi.JudgeBatchResult]()},
	{"embed_request", reflect.TypeFor[abi.EmbedRequest]()},
	{"embed_result", reflect.TypeFor[abi.EmbedResult]()},
	{"log_record", reflect.TypeFor[abi.LogRecord]()},
	{"error", reflect.TypeFor[abi.Error]()},
	{"test_case", reflect.TypeFor[abi.TestCase]()},
}

// File is one generated schema file.
type File struct {
	Name string // "measure_request.json"
	Data []byte
}

// Generate returns every schema file, in Messages order.
func Generate() ([]File, error) {
	used := map[string]bool{}
	var files []File
	for _, m := range Messages {
		data, err := schemaOf(m, used)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", m.Name, err)
		}
		files = append(files, File{Name: m.Name + ".json", Data: data})
	}
	var stale []string
	for k := range docs {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	for k := range tweaks {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return nil, fmt.Errorf("descriptions or constraints for fields no abi message has (renamed or removed?): %s",
			strings.Join(stale, ", "))
	}
	return files, nil
}

func schemaOf(m Message, used map[string]bool) ([]byte, error) {
	r := &jsonschema.Reflector{
		Anonymous:      true,
		ExpandedStruct: true,
		// Required = every field Go always writes (no omitempty); structs
		// reject properties they do not define (additionalProperties false).
	}
	s := r.ReflectFromType(m.Type)
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	s.ID = jsonschema.ID(BaseID + m.Name + ".json")
	s.Title = fmt.Sprintf("Anvil ABI v%d %s", abi.Major, m.Name)

	if err := annotate(m.Type.Name(), s, used); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(s.Definitions))
	for name := range s.Definitions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := annotate(name, s.Definitions[name], used); err != nil {
			return nil, err
		}
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	// Schema.MarshalJSON escapes <, > and & itself; undo it so the
	// descriptions read as written. No description contains a backslash,
	// so these sequences can only be the escapes.
	out := buf.Bytes()
	for esc, lit := range map[string]string{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"} {
		out = bytes.ReplaceAll(out, []byte(esc), []byte(lit))
	}
	return out, nil
}

// annotate sets the description of the object schema s of Go type typ and of
// each of its properties, and applies the constraints in tweaks.
func annotate(typ string, s *jsonschema.Schema, used map[string]bool) error {
	if s.Type != "object" || s.Properties == nil {
		return fmt.Errorf("$defs %s: not an object schema", typ)
	}
	d, ok := docs[typ]
	if !ok {
		return fmt.Errorf("no description for message %s (add it to docs in abi/internal/schemagen/gen)", typ)
	}
	used[typ] = true
	s.Description = d
	if t, ok := tweaks[typ]; ok {
		t(s)
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		key := typ + "." + pair.Key
		d, ok := docs[key]
		if !ok {
			return fmt.Errorf("no description for field %s (add it to docs in abi/internal/schemagen/gen)", key)
		}
		used[key] = true
		p := pair.Value
		p.Description = d
		if t, ok := tweaks[key]; ok {
			used[key] = true
			t(p)
		}
	}
	return nil
}

// Constraint helpers.

func enum(vals ...any) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Enum = vals }
}

func between(lo, hi string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = json.Number(lo), json.Number(hi) }
}

func atLeast(lo string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum = json.Number(lo) }
}

func nonEmpty(s *jsonschema.Schema) {
	one := uint64(1)
	switch s.Type {
	case "string":
		s.MinLength = &one
	case "array":
		s.MinItems = &one
	}
}

func nonEmptyAtMost(n uint64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		nonEmpty(s)
		s.MaxItems = &n
	}
}

func object(s *jsonschema.Schema) { s.Type = "object" }

// verdictSet: unique, non-empty strings.
func verdictSet(s *jsonschema.Schema) {
	s.UniqueItems = true
	nonEmpty(s.Items)
}

func jsonSchemaValue(s *jsonschema.Schema) {
	s.AnyOf = []*jsonschema.Schema{{Type: "object"}, {Type: "boolean"}}
}

// tweaks add constraints Go struct tags cannot carry (package abi is
// standard-library-only and has no jsonschema tags). Open sets — error codes,
// capabilities — stay plain strings so a later minor can add values without
// invalidating older readers; closed sets get an enum.
var tweaks = map[string]func(*jsonschema.Schema){
	"Descriptor.name":    func(s *jsonschema.Schema) { s.Pattern = "^[a-z0-9][a-z0-9_-]*$" },
	"Descriptor.version": nonEmpty,
	"Descriptor.abi_major": func(s *jsonschema.Schema) {
		s.Const = abi.Major
	},
	"Descriptor.abi_minor":           atLeast("0"),
	"Descriptor.kinds":               nonEmpty,
	"KindDescriptor.name":            nonEmpty,
	"KindDescriptor.role":            enum(string(abi.RoleMetric), string(abi.RoleNode)),
	"KindDescriptor.config_schema":   jsonSchemaValue,
	"PrepareRequest.config":          object,
	"MeasureRequest.config":          object,
	"MeasureRequest.threshold":       between("0", "1"),
	"MeasureResult.score":            between("0", "1"),
	"MeasureResult.threshold":        between("0", "1"),
	"MeasureResult.score_mode":       enum(abi.ScoreWeighted, abi.ScoreRaw, abi.ScoreSampled),
	"NodeRequest.config":             object,
	"LogRecord.level":                enum("debug", "info", "warn", "error"),
	"Error.code":                     nonEmpty,
	"Message.role":                   enum("system", "user", "assistant"),
	"JudgeRequest.messages":          nonEmpty,
	"JudgeRequest.schema":            jsonSchemaValue,
	"JudgeRequest.top_logprobs":      atLeast("0"),
	"JudgeRequest.max_tokens":        atLeast("0"),
	"ScoreSpec.samples":              atLeast("0"),
	"ScoreSpec.sample_temperature":   atLeast("0"),
	"JudgeRequest.temperature":       atLeast("0"),
	"ScoreResult.mode":               enum(abi.ScoreWeighted, abi.ScoreRaw, abi.ScoreSampled),
	"ScoreResult.spread":             atLeast("0"),
	"ScoreCandidate.probability":     between("0", "1"),
	"Usage.input_tokens":             atLeast("0"),
	"Usage.output_tokens":            atLeast("0"),
	"Usage.usd":                      atLeast("0"),
	"Usage.latency_ms":               atLeast("0"),
	"Usage.attempts":                 atLeast("0"),
	"Usage.calls":                    atLeast("0"),
	"NodeRequest.verdicts":           verdictSet,
	"KindDescriptor.verdicts":        verdictSet,
	"KindDescriptor.required_fields": func(s *jsonschema.Schema) { s.UniqueItems = true },
	"Descriptor.capabilities":        func(s *jsonschema.Schema) { s.UniqueItems = true },
	"KindDescriptor.capabilities":    func(s *jsonschema.Schema) { s.UniqueItems = true },
	"ToolCall.name":                  nonEmpty,
	"Turn.role":                      enum(abi.RoleUser, abi.RoleAssistant, abi.RoleSystem, abi.RoleTool),
	"JudgeBatch.requests":            nonEmpty,
	"EmbedRequest.texts":             nonEmptyAtMost(abi.MaxEmbedTexts),
	// Type-level constraints.
	"MeasureResult": func(s *jsonschema.Schema) {
		s.OneOf = []*jsonschema.Schema{{Required: []string{"score"}}, {Required: []string{"error"}}}
	},
}

// docs are the descriptions of every message ("Type") and field
// ("Type.json_name"), written for a guest author in any language.
var docs = map[string]string{
	// descriptor
	"Descriptor":              "Output of anvil_describe: who the plugin is, which kinds it offers, what it asks for. The host calls anvil_describe on every new instance before it serves (it must answer the same every time) and validates the first answer at load.",
	"Descriptor.name":         "Plugin name: lower case letters, digits, '_' and '-', starting with a letter or digit. Errors name the plugin as name@version.",
	"Descriptor.version":      "Version of the plugin itself (semver, e.g. \"1.4.0\"), not of the ABI.",
	"Descriptor.abi_major":    "ABI major the guest speaks; must equal the N of its marker export anvil_abi_vN (1 here). A mismatch is an abi_violation.",
	"Descriptor.abi_minor":    "ABI minor the guest was built against. A host accepts any minor of its major; it never sends or expects what the guest's minor does not know.",
	"Descriptor.kinds":        "The metric kinds and node kinds the plugin provides; at least one. Names are unique within the plugin.",
	"Descriptor.capabilities": "Host services the plugin asks for (known: \"judge\"). Asking is not having: the operator grants; an ungranted service answers capability_denied.",

	"KindDescriptor":                 "One metric kind or DAG node kind the plugin provides.",
	"KindDescriptor.name":            "Kind name as used in configuration (e.g. \"geval\", \"json_valid\"); the kind field of every request for this kind.",
	"KindDescriptor.role":            "\"metric\": called through anvil_measure (and anvil_prepare if prepare is true). \"node\": a DAG node, called through anvil_node.",
	"KindDescriptor.description":     "One line for humans (plugin inspect, catalogue).",
	"KindDescriptor.required_fields": "Test-case fields every invocation needs (standard names such as \"input\", \"actual_output\", or free-form extra field names). The host skips a case lacking one. Fields that depend on configuration are checked by the kind itself and reported as a missing_field error.",
	"KindDescriptor.config_schema":   "JSON Schema (draft 2020-12) of the kind's config object. The host validates every configured metric or node against it before the run starts.",
	"KindDescriptor.verdicts":        "Fixed verdict set of a node kind whose verdicts do not come from configuration (a code gate: [\"false\", \"true\"]). Absent for metric kinds, task kinds and node kinds whose verdicts are configured.",
	"KindDescriptor.prepare":         "True when the kind implements anvil_prepare; the host then calls it once per configured metric per run, before any case.",
	"KindDescriptor.capabilities":    "ABI minor 1: host services this kind asks for, replacing the plugin's list for it (an empty list: none). Absent: the kind asks for the plugin's capabilities. Every entry must also be in the plugin's capabilities, which a minor-0 host reads alone.",

	// prepare
	"PrepareRequest":             "Input of anvil_prepare: once-per-run, case-independent work for one configured metric (e.g. G-Eval generating its evaluation steps).",
	"PrepareRequest.kind":        "Metric kind to prepare; one of the descriptor's kinds with role \"metric\" and prepare true.",
	"PrepareRequest.metric":      "Name of the configured metric, for logs and error messages.",
	"PrepareRequest.config":      "The metric's config object, already validated against the kind's config_schema. Absent when the metric has no config.",
	"PrepareRequest.judge_model": "Model name of the metric's judge; absent when none is configured. Anything the guest derives from judge output must be keyed on it.",

	"PrepareResult":         "Output of anvil_prepare.",
	"PrepareResult.state":   "Any JSON value; handed back verbatim as prepared in every measure request of this metric for the rest of the run.",
	"PrepareResult.details": "Any JSON value; recorded once in the run summary (e.g. the generated evaluation steps).",
	"PrepareResult.error":   "Set when the guest could not prepare; every case of the metric is then recorded with this error and anvil_measure is not called for it.",

	// measure
	"MeasureRequest":             "Input of anvil_measure: score one test case with one configured metric.",
	"MeasureRequest.kind":        "Metric kind to run; one of the descriptor's kinds with role \"metric\".",
	"MeasureRequest.metric":      "Name of the configured metric, for logs and error messages.",
	"MeasureRequest.config":      "The metric's config object, already validated against the kind's config_schema. Absent when the metric has no config.",
	"MeasureRequest.prepared":    "The state this metric's anvil_prepare returned, verbatim; absent when the kind does not prepare or prepare returned no state.",
	"MeasureRequest.threshold":   "Configured pass mark in [0,1]. A kind may impose its own (strict mode) and reports the one it applied in the result.",
	"MeasureRequest.judge_model": "Model name of the metric's judge; absent when none is configured.",
	"MeasureRequest.case":        "The test case to score.",

	"MeasureResult":            "Output of anvil_measure. Exactly one of score and error is present.",
	"MeasureResult.score":      "Score normalised to [0,1]. Absent when error is set.",
	"MeasureResult.success":    "Advisory: the guest's opinion of score >= threshold (false when error is set). The host decides pass/fail itself from score, the configured threshold and strict mode.",
	"MeasureResult.threshold":  "Advisory, in [0,1]: the threshold the guest had in mind (echo the request's). The host applies the configured threshold (1 under strict_mode) whatever this says.",
	"MeasureResult.reason":     "Human-readable explanation of the score, recorded with the case.",
	"MeasureResult.score_mode": "How a judged score was obtained: \"weighted\" (token log-probabilities), \"raw\" (the integer the judge wrote), \"sampled\" (mean of n samples). Absent for deterministic kinds.",
	"MeasureResult.details":    "Any JSON value; kind-specific detail recorded with the case (steps, verdicts, judge replies).",
	"MeasureResult.error":      "A metric error: the guest could not score this case (missing_field, invalid_config, judge_error, budget_exhausted, ...). The case is recorded as errored for this metric; the instance stays in service.",

	// node
	"NodeInput":         "The output of one parent task node, handed to a DAG node.",
	"NodeInput.node_id": "Id of the parent task node.",
	"NodeInput.label":   "The parent task's configured output label, for prompt headings.",
	"NodeInput.output":  "Text the parent task produced.",

	"NodeRequest":             "Input of anvil_node: run one DAG node on one test case.",
	"NodeRequest.kind":        "Node kind to run; one of the descriptor's kinds with role \"node\".",
	"NodeRequest.node_id":     "Id of the node in the DAG, for logs and error messages.",
	"NodeRequest.config":      "The node's config object, already validated against the kind's config_schema. Absent when the node has no config.",
	"NodeRequest.inputs":      "Outputs of the node's task parents, in configuration order. Absent for root nodes.",
	"NodeRequest.verdicts":    "Verdicts the node may return (binary: [\"false\", \"true\"]; choice: the configured strings; a code node: its descriptor verdicts). Absent for task nodes, which return output instead.",
	"NodeRequest.judge_model": "Model name of the DAG metric's judge; absent when none is configured.",
	"NodeRequest.case":        "The test case the DAG is evaluating.",

	"NodeResult":         "Output of anvil_node. A decision node sets verdict, a task node sets output; or error is set.",
	"NodeResult.verdict": "One of the request's verdicts, exactly as written there (decision nodes). Any other value makes the result malformed (abi_violation).",
	"NodeResult.output":  "Text a task node produced; handed to its children as a node input.",
	"NodeResult.reason":  "Human-readable explanation of the verdict or output, recorded on the DAG path.",
	"NodeResult.details": "Any JSON value; kind-specific detail recorded with the node.",
	"NodeResult.error":   "A metric error: the node could not run on this case. The DAG metric records the case as errored; the instance stays in service.",

	// log
	"LogRecord":         "Input of the anvil_log host function: one log line, attributed by the host to the plugin and the current invocation.",
	"LogRecord.level":   "Severity: \"debug\", \"info\", \"warn\" or \"error\".",
	"LogRecord.message": "The log message.",
	"LogRecord.attrs":   "Structured attributes; any JSON values keyed by name.",

	// error
	"Error":           "The typed error of the ABI. Errors crossing the boundary are data, carried the same way by every transport.",
	"Error.code":      "Classification. Known codes: metric_error, invalid_config, missing_field, judge_error, judge_truncated, judge_unavailable, request_too_large, budget_exhausted, capability_denied, cache_miss (metric errors: the guest reports them, or receives them from a host function); trap, abi_violation, output_too_large, timeout, fuel_exhausted (set by the host only). Readers must accept codes they do not know and treat them as metric_error.",
	"Error.message":   "Human-readable message; says what failed and, where it can, what to do about it.",
	"Error.plugin":    "\"name@version\" of the plugin the error concerns. Filled in by the host; a guest leaves it absent.",
	"Error.digest":    "Digest of the plugin module (\"sha256:<hex>\"). Filled in by the host; a guest leaves it absent.",
	"Error.field":     "The test-case field (missing_field) or config field (invalid_config) at fault.",
	"Error.stderr":    "The guest's captured standard error, bounded; set by the host on traps (a panicking guest prints its panic there).",
	"Error.retryable": "True for faults worth retrying in a later run: the judge's (rate limits, outages) or the infrastructure's (a cluster worker lost, a transport timeout); --resume evaluates the case again.",

	// judge
	"JudgeBatch":          "Input of the anvil_judge host function: judge requests the host runs concurrently, subject to the judge's limits and the invocation's budget.",
	"JudgeBatch.requests": "The requests; at least one. The answer has one response per request, in the same order.",

	"JudgeBatchResult":           "Output of anvil_judge.",
	"JudgeBatchResult.responses": "One response per request, in request order; each carries its own error. Empty when error is set.",
	"JudgeBatchResult.error":     "Set when the batch as a whole was refused: capability_denied (judge not granted), budget_exhausted (the invocation's judge-call or judge-token budget cannot cover it), abi_violation (malformed batch), output_too_large (batch over the payload limit).",

	"EmbedRequest":         "Input of the anvil_embed host function (ABI minor 5): texts to turn into vectors with the embedding model of a configured judge. Needs the judge capability; counts as one judge call and its estimated tokens against the invocation's judge budget.",
	"EmbedRequest.judge":   "Name of a configured judge; absent means the judge of the metric being run. Its embedding_model answers.",
	"EmbedRequest.texts":   "The texts to embed; at least one, at most 2048. Each text's vector is cached by the host, so a text already embedded by the same model costs nothing.",
	"EmbedRequest.purpose": "Label of the call in accounting (\"similarity\").",

	"EmbedResult":         "Output of anvil_embed.",
	"EmbedResult.vectors": "One vector per text, in request order, all of one length, every value finite. Empty when error is set.",
	"EmbedResult.usage":   "Accounting of the request: calls is the upstream embeddings calls it cost (0 when every text was cached: cache_hit).",
	"EmbedResult.error":   "Set when the request failed whole: capability_denied (judge not granted), budget_exhausted (the invocation's judge budget or the judge's spend limit), invalid_config (the judge has no embedding_model, or its provider no embeddings API), request_too_large, judge_unavailable, judge_error, cache_miss (replay mode), abi_violation (malformed request), output_too_large.",

	"Message":         "One chat message.",
	"Message.role":    "\"system\", \"user\" or \"assistant\".",
	"Message.content": "Message text.",

	"JudgeRequest":              "One judge (LLM) completion asked of the host. The guest never sees the judge's URL or key.",
	"JudgeRequest.judge":        "Name of a configured judge; absent means the judge of the metric being run.",
	"JudgeRequest.messages":     "The conversation to complete; at least one message.",
	"JudgeRequest.schema":       "JSON Schema the reply must satisfy. The host uses the judge's strongest structured-output mode, validates the reply, makes one repair attempt, and returns the parsed object as json; still invalid is a judge_error.",
	"JudgeRequest.schema_name":  "Name of the schema, for providers that want one.",
	"JudgeRequest.top_logprobs": "Number of most likely alternatives to return per generated token (capped by the judge's configuration); 0 or absent asks for no log-probabilities.",
	"JudgeRequest.omit_tokens":  "The caller reads score, not tokens: the response carries no tokens, and the host keeps of the judge's log-probabilities only what weighting the score needs. top_logprobs still sets how many alternatives are asked of the judge, and the request is the same one for the judge cache.",
	"JudgeRequest.score":        "Asks the host to locate an integer score in the reply and weight it by its token log-probabilities (see ScoreSpec). The host asks the judge for the log-probabilities it needs whatever top_logprobs says; an integer in [min,max] that cannot be located makes the response a judge_error.",
	"JudgeRequest.temperature":  "Sampling temperature; absent leaves the judge's configured default.",
	"JudgeRequest.max_tokens":   "Cap on reply tokens; 0 or absent leaves the judge's default.",
	"JudgeRequest.purpose":      "Label of the call in accounting and logs (\"steps\", \"score\", \"verdict\").",

	"ScoreSpec":                    "The integer score a judge reply carries, for host-side location and log-probability weighting.",
	"ScoreSpec.min":                "Lowest valid score, inclusive.",
	"ScoreSpec.max":                "Highest valid score, inclusive; greater than min.",
	"ScoreSpec.field":              "With a schema: the JSON property holding the score (default \"score\"). Without a schema the score is the last integer in the reply text.",
	"ScoreSpec.samples":            "Above 1: when the judge returns no log-probabilities, take that many samples and use their mean (mode \"sampled\"). 0 or 1: no sampling fallback (mode \"raw\").",
	"ScoreSpec.sample_temperature": "Temperature of those samples; default 1.",

	"JudgeResponse":         "The host's answer to one judge request.",
	"JudgeResponse.content": "Reply text. Absent when error is set.",
	"JudgeResponse.json":    "The parsed, schema-valid reply, when the request had a schema.",
	"JudgeResponse.tokens":  "Generated tokens with log-probabilities, when asked for (top_logprobs) and supported by the judge.",
	"JudgeResponse.score":   "The located and weighted score, when the request had a score spec and no error occurred.",
	"JudgeResponse.usage":   "Accounting of this request, also present on errors.",
	"JudgeResponse.error":   "A fault of this request alone: judge_error (unreachable, refused, unparseable after repair), budget_exhausted, cache_miss (replay mode, not recorded).",

	"TokenLogprob":         "One generated token and its most likely alternatives.",
	"TokenLogprob.token":   "Token text.",
	"TokenLogprob.logprob": "Natural-log probability of the token (<= 0).",
	"TokenLogprob.top":     "Most likely alternatives at this position, most likely first; at most top_logprobs of them.",

	"TopLogprob":         "One alternative at a token position.",
	"TopLogprob.token":   "Token text.",
	"TopLogprob.logprob": "Natural-log probability of the token (<= 0).",

	"ScoreResult":            "A score the host located in a judge reply.",
	"ScoreResult.raw":        "The integer the judge wrote (\"sampled\": the first sample's).",
	"ScoreResult.value":      "Score on the judge's scale [min,max]: the probability-weighted mean of the candidates (\"weighted\"), raw (\"raw\"), or the mean of the samples (\"sampled\"). Not normalised.",
	"ScoreResult.mode":       "\"weighted\", \"raw\" or \"sampled\"; report it as the measure result's score_mode.",
	"ScoreResult.cause":      "Why the mode is not \"weighted\" (e.g. \"judge has no logprobs\", \"all candidates below 1%\"). Absent for \"weighted\".",
	"ScoreResult.candidates": "Values that entered the weighted mean with their summed probabilities, ascending by value (\"weighted\" only).",
	"ScoreResult.spread":     "Standard deviation of the samples (\"sampled\" only); absent means 0.",

	"ScoreCandidate":             "One integer score value and its probability mass.",
	"ScoreCandidate.value":       "A score value in [min,max].",
	"ScoreCandidate.probability": "Summed probability of the tokens spelling this value, in [0,1].",

	"Usage":               "Accounting of one judge request.",
	"Usage.model":         "Model that answered.",
	"Usage.input_tokens":  "Prompt tokens.",
	"Usage.output_tokens": "Completion tokens.",
	"Usage.usd":           "Cost in US dollars from the judge's price table; 0 when unknown or served from cache.",
	"Usage.latency_ms":    "Wall-clock latency in milliseconds, retries included.",
	"Usage.calls":         "Upstream chat completions this request cost (1, plus a repair, plus sample top-ups); 0 on a cache hit or when refused before sending.",
	"Usage.attempts":      "HTTP attempts made to the judge, retries included; 0 on a cache hit.",
	"Usage.usage_unknown": "True when a completion's reply carried no usage block: its token counts (and usd) are estimated from the text (characters/4), not reported by the server.",
	"Usage.cache_hit":     "True when served from the host's cache; cached tokens do not count against the invocation's token budget.",

	// test case
	"TestCase":                   "One row of a dataset.",
	"TestCase.id":                "Identifier, unique within the dataset.",
	"TestCase.input":             "The input given to the system under test (field name \"input\").",
	"TestCase.actual_output":     "What the system under test produced (\"actual_output\").",
	"TestCase.expected_output":   "The reference answer (\"expected_output\").",
	"TestCase.context":           "Ground-truth context passages (\"context\"); rendered one per line.",
	"TestCase.retrieval_context": "Passages the system retrieved (\"retrieval_context\"); rendered one per line.",
	"TestCase.tools_called":      "Tools the agent called (\"tools_called\"); rendered as compact JSON.",
	"TestCase.expected_tools":    "Tools the agent was expected to call (\"expected_tools\"); rendered as compact JSON.",
	"TestCase.turns":             "ABI minor 4: the turns of a conversational case, in order (\"turns\"); rendered as compact JSON. A conversational case leaves input, actual_output, expected_output, retrieval_context, tools_called and expected_tools to its turns.",
	"TestCase.scenario":          "ABI minor 4: what the user in a conversation is trying to do (\"scenario\").",
	"TestCase.expected_outcome":  "ABI minor 4: what the conversation should come to (\"expected_outcome\").",
	"TestCase.chatbot_role":      "ABI minor 4: the role the assistant was told to play (\"chatbot_role\").",
	"TestCase.extra":             "Free-form fields by name, any JSON values, as they were in the dataset. A string renders as itself, anything else as compact JSON.",

	"Turn":                   "ABI minor 4: one message of a conversation.",
	"Turn.role":              "Who spoke: \"user\", \"assistant\", \"system\" or \"tool\".",
	"Turn.content":           "What was said; may be empty only for a turn that calls tools.",
	"Turn.tools_called":      "Tools the assistant called in this turn.",
	"Turn.retrieval_context": "Passages the assistant retrieved for this turn.",

	"ToolCall":           "A tool an agent called, or was expected to call.",
	"ToolCall.name":      "Tool name.",
	"ToolCall.arguments": "Arguments, any JSON value (usually an object).",
	"ToolCall.output":    "What the tool returned, any JSON value.",
}
