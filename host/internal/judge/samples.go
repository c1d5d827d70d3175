package judge

import (
	"context"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/score"
)

// DoSamples answers several samples of one request (a metric's samples:
// N asks the same request N times) as DoSample answers each — every
// sample its own cache entry and its own reply — but, when the judge
// supports n (supports_n), with one upstream call for all the samples the
// cache does not answer: the call asks for that many choices, and choice i
// is the i-th missing sample's reply, recorded under that sample's key.
// A choice that cannot be used (cut off, not valid structured output, no
// score) or that the server did not return is asked again alone, with the
// repair DoSample makes. The call's usage is on the first sample it
// answers; the others carry none, so summing responses counts the call
// once. Without supports_n, in replay mode, or for the score-sampling
// fallback (which already asks for n choices), each sample is DoSample.
func (j *Judge) DoSamples(ctx context.Context, req abi.JudgeRequest, samples []int) []abi.JudgeResponse {
	defer j.notifyUnavailable()
	out := make([]abi.JudgeResponse, len(samples))
	each := func(idx []int) {
		for _, i := range idx {
			out[i] = j.DoSample(ctx, req, samples[i])
		}
	}
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	if !j.cfg.SupportsN || len(samples) < 2 || j.cacheMode == CacheReplay {
		each(all)
		return out
	}
	plans := make([]*plan, len(samples))
	for i, k := range samples {
		p, err := j.plan(req, k)
		if err != nil || p.samples > 1 {
			each(all) // the same error for each, or the sampling fallback
			return out
		}
		plans[i] = p
	}
	var missing []int
	for i, p := range plans {
		if j.cacheMode != CacheOff {
			if resp, ok, _ := j.lookup(ctx, p); ok {
				j.counters.requests.Add(1)
				out[i] = resp
				continue
			}
		}
		missing = append(missing, i)
	}
	if len(missing) < 2 {
		each(missing)
		return out
	}

	resps, unusable, orphan := j.together(ctx, plans, missing)
	retry := map[int]bool{}
	for _, i := range unusable {
		retry[i] = true
	}
	for _, i := range missing {
		if retry[i] {
			continue
		}
		j.counters.requests.Add(1)
		if resps[i].Error != nil {
			j.counters.errors.Add(1)
		}
		out[i] = resps[i]
	}
	each(unusable)
	if orphan != nil {
		addUsage(&out[unusable[0]].Usage, *orphan)
	}
	return out
}

// addUsage adds o's spending to u.
func addUsage(u *abi.Usage, o abi.Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.USD += o.USD
	u.LatencyMS += o.LatencyMS
	u.Calls += o.Calls
	u.Attempts += o.Attempts
	u.UsageUnknown = u.UsageUnknown || o.UsageUnknown
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheWriteInputTokens += o.CacheWriteInputTokens
	u.Unpriced = u.Unpriced || o.Unpriced
}

// together makes the one call with n = len(missing) choices and turns
// each choice into its sample's response, recording it. It returns the
// responses by sample position, the positions whose choice could not be
// used (to be asked alone), and, when no choice was usable, the call's
// usage for the caller to add to the first of those. A failed call is
// every missing sample's error.
func (j *Judge) together(ctx context.Context, plans []*plan, missing []int) ([]abi.JudgeResponse, []int, *abi.Usage) {
	resps := make([]abi.JudgeResponse, len(plans))
	start := j.clock.Now()
	var u usage
	first := plans[missing[0]]
	comp, err := j.safelyComplete(ctx, first, call{n: len(missing), temperature: first.temperature}, &u)
	u.mu.Lock()
	spent := j.spent(&u, start)
	u.mu.Unlock()
	charged := false
	charge := func(r *abi.JudgeResponse) {
		r.Usage = abi.Usage{Model: j.cfg.Model}
		if !charged {
			r.Usage, charged = spent, true
		}
	}
	if err != nil {
		for _, i := range missing {
			resps[i] = abi.JudgeResponse{Error: err}
			charge(&resps[i])
		}
		return resps, nil, nil
	}
	var unusable []int
	for c, i := range missing {
		if c >= len(comp.choices) {
			unusable = append(unusable, i)
			continue
		}
		resp, ok := j.fromChoice(plans[i], comp.choices[c])
		if !ok {
			unusable = append(unusable, i)
			continue
		}
		charge(&resp)
		if j.cacheMode == CacheReadWrite {
			j.record(ctx, plans[i], resp)
		}
		resps[i] = resp
	}
	if !charged {
		return resps, unusable, &spent // no choice was usable
	}
	return resps, unusable, nil
}

func (j *Judge) safelyComplete(ctx context.Context, p *plan, c call, u *usage) (comp completion, err *abi.Error) {
	resp := j.safely(func() abi.JudgeResponse {
		comp, err = j.complete(ctx, p, c, u)
		return abi.JudgeResponse{}
	})
	if resp.Error != nil {
		return completion{}, resp.Error
	}
	return comp, err
}

// fromChoice is one choice as a sample's response, as execute would make
// it from a first reply that needed no repair; false when it cannot be
// used as it is.
func (j *Judge) fromChoice(p *plan, ch choice) (abi.JudgeResponse, bool) {
	if j.unfinished(p, ch) != nil {
		return abi.JudgeResponse{}, false
	}
	resp := abi.JudgeResponse{Content: ch.content}
	var value any // the reply's object as parsed, for the score field
	if p.schema != nil {
		obj, problem := structuredObject(p.schema, ch.content)
		if problem != nil {
			return abi.JudgeResponse{}, false
		}
		resp.JSON, value = obj.canonical, obj.value
	}
	if p.returnTokens {
		resp.Tokens = ch.tokens
	}
	if p.score != nil {
		sr, err := score.FromTokens(ch.content, ch.tokens, *p.score, scoreField(value, p.score.Field))
		if err != nil {
			return abi.JudgeResponse{}, false
		}
		if !j.cfg.SupportsLogprobs && sr.Mode == abi.ScoreRaw {
			sr.Cause = "judge has no logprobs (supports_logprobs is false)"
		}
		resp.Score = &sr
	}
	return resp, true
}
