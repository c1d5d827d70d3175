package abi

import "encoding/json"

// JudgeBatch is the input of the anvil_judge host function. The host runs
// the requests of one batch concurrently, subject to the judge's limits, and
// answers in the same order.
type JudgeBatch struct {
	Requests []JudgeRequest `json:"requests"`
}

// JudgeBatchResult is the output of anvil_judge: one response per request,
// in order. Each response carries its own error; a batch never fails whole
// unless the batch itself is malformed or the capability is denied, in which
// case Error is set and Responses is empty.
type JudgeBatchResult struct {
	Responses []JudgeResponse `json:"responses"`
	Error     *Error          `json:"error,omitempty"`
}

// Message is one chat message.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role    string `json:"role"`
	Content string `json:"content"`
}

// JudgeRequest asks the host for one judge completion. The guest never sees
// the judge's URL, key or model choice beyond the model name.
type JudgeRequest struct {
	// Judge names a configured judge; empty means the metric's judge.
	Judge    string    `json:"judge,omitempty"`
	Messages []Message `json:"messages"`
	// Schema, when set, is the JSON Schema the reply must satisfy. The host
	// uses the judge's strongest structured-output mode, validates the reply,
	// makes one repair attempt, and returns the parsed object in JSON.
	Schema json.RawMessage `json:"schema,omitempty"`
	// SchemaName names the schema for providers that want a name.
	SchemaName string `json:"schema_name,omitempty"`
	// TopLogprobs > 0 asks for that many alternatives per generated token
	// (capped by the judge's configuration); 0 asks for none.
	TopLogprobs int `json:"top_logprobs,omitempty,omitzero"`
	// OmitTokens says the caller reads the score, not the tokens: the
	// response carries no Tokens, and the host keeps of the judge's
	// log-probabilities only what weighting the score needs. TopLogprobs
	// still sets how many alternatives are asked of the judge, and the
	// request is the same one for the judge cache.
	OmitTokens bool `json:"omit_tokens,omitempty,omitzero"`
	// Score, when set, asks the host to locate an integer score in the reply
	// and weight it by its token log-probabilities (see ScoreSpec).
	Score *ScoreSpec `json:"score,omitempty"`
	// Temperature; nil leaves the judge's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens caps the reply; 0 leaves the judge's default.
	MaxTokens int `json:"max_tokens,omitempty,omitzero"`
	// Purpose labels the call in accounting ("steps", "score", "verdict").
	Purpose string `json:"purpose,omitempty"`
}

// ScoreSpec describes the integer score a judge reply carries.
type ScoreSpec struct {
	// Min and Max bound the score, inclusive. Max > Min.
	Min int `json:"min"`
	Max int `json:"max"`
	// Field is the JSON field holding the score when Schema is set; default "score".
	Field string `json:"field,omitempty"`
	// Samples > 1 asks for a sampling fallback when the judge has no
	// logprobs: that many samples, mean taken.
	Samples int `json:"samples,omitempty,omitzero"`
	// SampleTemperature is the temperature of those samples (default 1).
	SampleTemperature *float64 `json:"sample_temperature,omitempty"`
}

// JudgeResponse is the host's answer to one JudgeRequest.
type JudgeResponse struct {
	// Content is the reply text.
	Content string `json:"content,omitempty"`
	// JSON is the parsed, schema-valid reply when the request had a Schema.
	JSON json.RawMessage `json:"json,omitempty"`
	// Tokens are the reply's tokens with log-probabilities, when asked for
	// and supported.
	Tokens []TokenLogprob `json:"tokens,omitempty"`
	// Score is the located and weighted score when the request had a ScoreSpec.
	Score *ScoreResult `json:"score,omitempty"`
	Usage Usage        `json:"usage"`
	// Error is a judge fault (unreachable, refused, unparseable reply) or a
	// budget/capability denial; Content is then empty.
	Error *Error `json:"error,omitempty"`
}

// TokenLogprob is one generated token and its most likely alternatives.
type TokenLogprob struct {
	Token   string       `json:"token"`
	Logprob float64      `json:"logprob"`
	Top     []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one alternative at a token position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// Score modes.
const (
	ScoreWeighted = "weighted"
	ScoreRaw      = "raw"
	ScoreSampled  = "sampled"
)

// ScoreResult is a score located in a judge reply.
type ScoreResult struct {
	// Raw is the integer the judge wrote (for "sampled": the first sample's).
	Raw int `json:"raw"`
	// Value is the score on the judge's scale: the logprob-weighted mean
	// ("weighted"), Raw ("raw"), or the mean of samples ("sampled").
	Value float64 `json:"value"`
	// Mode is "weighted", "raw" or "sampled".
	Mode string `json:"mode"`
	// Cause says why the mode is not "weighted" ("judge has no logprobs",
	// "all candidates below 1%", ...). Empty for "weighted".
	Cause string `json:"cause,omitempty"`
	// Candidates are the values that entered the weighted mean, with their
	// summed probabilities, ascending by value.
	Candidates []ScoreCandidate `json:"candidates,omitempty"`
	// Spread is the standard deviation of the samples ("sampled" only).
	Spread float64 `json:"spread,omitempty,omitzero"`
}

// ScoreCandidate is one integer value and its probability mass.
type ScoreCandidate struct {
	Value       int     `json:"value"`
	Probability float64 `json:"probability"`
}

// Usage is the accounting of one judge request. One request may cost
// several upstream completions (a repair, sample top-ups) and each
// completion several HTTP attempts (retries).
type Usage struct {
	Model        string  `json:"model,omitempty"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	LatencyMS    float64 `json:"latency_ms"`
	// Calls is the upstream chat completions this request cost: 1, plus a
	// repair, plus sample top-ups; 0 on a cache hit or a request refused
	// before sending. "Judge calls" everywhere (table, summary, report,
	// estimate) means this.
	Calls int `json:"calls,omitempty,omitzero"`
	// Attempts is HTTP attempts, retries included.
	Attempts int  `json:"attempts"`
	CacheHit bool `json:"cache_hit"`
	// UsageUnknown: a completion's reply had no usage block, so its
	// tokens (and USD) are estimated from the text (characters/4), not
	// reported by the server.
	UsageUnknown bool `json:"usage_unknown,omitempty,omitzero"`

	// The host's own accounting, not part of ABI 1.x (never encoded, so a
	// guest never sees them): the host sums them into its results.
	//
	// CachedInputTokens of InputTokens were served from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens); CacheWriteInputTokens of
	// InputTokens were written to it (Anthropic's
	// cache_creation_input_tokens). Each is priced at its own rate.
	CachedInputTokens     int `json:"-"`
	CacheWriteInputTokens int `json:"-"`
	// Unpriced: the judge has no price for its model (not in the price
	// table, no price: in its config), so USD is 0 for calls that cost
	// money.
	Unpriced bool `json:"-"`
}
