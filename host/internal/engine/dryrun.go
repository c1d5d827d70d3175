package engine

import (
	"context"
	"encoding/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
)

// dryRun answers judge requests for `estimate` without calling the judge:
// a request already in the cache is served from it and is free; any other
// is priced from the judge's own forecast of it (the calls it makes — one
// per sample when a judge without logprobs samples a score — and their
// input) and answered with the smallest reply its schema allows, so the
// metric's own logic decides what it would ask next. Running the real
// metric code is what keeps the estimate honest — a separate cost model
// would drift from what the kinds actually send.
type dryRun struct {
	outputTokens int // assumed size of one uncached reply
	// replaying is the judges that, having no key, answer from their
	// offline_recording. Estimate prices what the configured judge would
	// cost, so the recording's answers are not taken as free cache hits:
	// they would make every keyless estimate $0, --cache off or not.
	replaying map[*judge.Judge]bool
}

// Estimate is the projected cost of one metric.
type Estimate struct {
	Metric string `json:"metric"`
	Kind   string `json:"kind"`
	Judge  string `json:"judge,omitempty"`
	Cases  int    `json:"cases"`
	// JudgeCalls is upstream completions, as `run` counts them.
	JudgeCalls int `json:"judge_calls"`
	// CachedCalls is requests the cache would answer, for free.
	CachedCalls  int     `json:"cached_calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	// BatchUSD is USD with the cases' judge calls sent in batches (`run
	// --batch`), at the provider's batch discount; prepare calls stay
	// live. Equal to USD for a judge without a batch API.
	BatchUSD float64 `json:"batch_usd"`
	// Refused is cases on which the judge would refuse a request as too
	// large for it (request_too_large): not sent, not priced.
	Refused int    `json:"refused,omitempty"`
	Note    string `json:"note,omitempty"`
}

func (d *dryRun) respond(ctx context.Context, j *judge.Judge, req abi.JudgeRequest, sample int) abi.JudgeResponse {
	// A replaying judge's recording is not the cache a keyed run uses.
	if !d.replaying[j] {
		if cached, ok := j.CachedSample(ctx, req, sample); ok {
			// Served from the cache in a real run too: free, and no tokens spent.
			cached.Usage = abi.Usage{Model: j.Model(), CacheHit: true}
			return cached
		}
	}
	f, err := j.Forecast(req)
	if err != nil {
		// What the real run would answer without sending anything.
		return abi.JudgeResponse{Error: err, Usage: abi.Usage{Model: j.Model()}}
	}
	out := d.outputTokens
	if f.MaxTokens > 0 && f.MaxTokens < out {
		out = f.MaxTokens
	}
	out *= f.Replies
	resp := abi.JudgeResponse{Usage: abi.Usage{
		Model: j.Model(), InputTokens: f.InputTokens, OutputTokens: out, USD: j.Price(f.InputTokens, out),
		Calls: f.Calls, Attempts: f.Calls, Unpriced: f.Calls > 0 && !j.PriceInfo().Known,
	}}
	if len(req.Schema) > 0 {
		var schema map[string]any
		if json.Unmarshal(req.Schema, &schema) == nil {
			resp.JSON, _ = json.Marshal(sampleOf(schema))
			resp.Content = string(resp.JSON)
		}
	}
	if req.Score != nil {
		resp.Score = &abi.ScoreResult{Raw: req.Score.Max, Value: float64(req.Score.Max), Mode: abi.ScoreRaw, Cause: "estimate: no call made"}
	}
	return resp
}

// sampleOf builds a minimal instance of a JSON Schema: enough for a kind to
// parse the reply and go on.
func sampleOf(s map[string]any) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	// An alternative of anyOf or oneOf is an instance of the whole.
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if first, ok := alts[0].(map[string]any); ok {
				return sampleOf(first)
			}
		}
	}
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				obj[name] = sampleOf(ps)
			}
		}
		// A map (members named by the reply, a schema for their values)
		// gets one member: an empty one would tell a kind there is
		// nothing to ask next — knowledge_retention asks about the
		// assistant turns after a user turn's facts — and the estimate
		// would count less than a run whose replies name anything.
		if extra, ok := s["additionalProperties"].(map[string]any); ok && len(props) == 0 {
			obj["estimate"] = sampleOf(extra)
		}
		return obj
	case "array":
		items, _ := s["items"].(map[string]any)
		n := 3
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		// A kind that bounds a list to its case (one verdict per node)
		// would repair a longer one: a repair no run of good replies makes.
		if m, ok := s["maxItems"].(float64); ok && int(m) < n {
			n = max(int(m), 0)
		}
		arr := make([]any, n)
		for i := range arr {
			arr[i] = sampleOf(items)
		}
		return arr
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 0
	case "boolean":
		return true
	case "null":
		return nil
	}
	return "estimate placeholder text of a typical length for a judge reply"
}

// respondSamples prices samples of one request as judge.DoSamples sends
// them: the cached ones free, and, on a judge that supports n, the rest as
// one call whose input is sent once and whose replies are one per sample
// (charged to the first of them); otherwise each as respond prices it.
func (d *dryRun) respondSamples(ctx context.Context, j *judge.Judge, req abi.JudgeRequest, samples []int) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(samples))
	var missing []int
	for i, k := range samples {
		out[i] = d.respond(ctx, j, req, k)
		if !out[i].Usage.CacheHit && out[i].Error == nil {
			missing = append(missing, i)
		}
	}
	if !j.Config().SupportsN || len(missing) < 2 {
		return out
	}
	if f, err := j.Forecast(req); err != nil || f.Replies > 1 {
		return out // the score-sampling fallback already asks for n
	}
	first := &out[missing[0]].Usage
	for _, i := range missing[1:] {
		first.OutputTokens += out[i].Usage.OutputTokens
		out[i].Usage = abi.Usage{Model: j.Model()}
	}
	first.Calls, first.Attempts = 1, 1
	first.USD = j.Price(first.InputTokens, first.OutputTokens)
	return out
}

// embed prices an embeddings request as Judge.Embed would send it (its
// cached texts free, the rest in the provider's batches) and answers with
// a vector per text, all alike, so the metric's own code goes on: its
// score under estimate means nothing, its calls are what run makes.
func (d *dryRun) embed(ctx context.Context, j *judge.Judge, texts []string) abi.EmbedResult {
	f, err := j.ForecastEmbed(ctx, texts, !d.replaying[j])
	if err != nil {
		return abi.EmbedResult{Vectors: [][]float64{}, Error: err, Usage: abi.Usage{Model: j.EmbeddingModel()}}
	}
	vectors := make([][]float64, len(texts))
	for i := range vectors {
		vectors[i] = []float64{1}
	}
	return abi.EmbedResult{Vectors: vectors, Usage: abi.Usage{
		Model: j.EmbeddingModel(), InputTokens: f.InputTokens, USD: f.USD,
		Calls: f.Calls, Attempts: f.Calls, CacheHit: f.Calls == 0,
	}}
}
