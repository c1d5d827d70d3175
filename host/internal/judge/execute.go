package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/score"
)

// execute does a request's upstream work: one reply (with at most one
// repair for structured output) and its score, or the sampling fallback.
func (j *Judge) execute(ctx context.Context, p *plan, u *usage) abi.JudgeResponse {
	if p.samples > 1 {
		return j.sampled(ctx, p, u)
	}
	ch, obj, err := j.reply(ctx, p, u)
	if err != nil {
		return abi.JudgeResponse{Error: err}
	}
	resp := abi.JudgeResponse{Content: ch.content, JSON: obj.canonical}
	if p.wantsTokens() {
		resp.Tokens = ch.tokens
	}
	if p.score != nil {
		sr, err := score.FromJudgeTokens(j.numberTokens(), ch.content, ch.tokens, *p.score, scoreField(obj.value, p.score.Field))
		if err != nil {
			return abi.JudgeResponse{Error: j.errorf(abi.CodeJudge, false, "reply carries no usable score: %v (reply: %s)", err, excerpt(ch.content))}
		}
		if !j.cfg.SupportsLogprobs && sr.Mode == abi.ScoreRaw {
			sr.Cause = j.noLogprobsCause()
		}
		resp.Score = &sr
	}
	return resp
}

// reply gets one usable reply: for a structured request, a parsed,
// schema-valid object, after at most one repair attempt that shows the
// model its bad reply and what was wrong with it.
func (j *Judge) reply(ctx context.Context, p *plan, u *usage) (choice, replyObject, *abi.Error) {
	first := call{n: 1, temperature: p.temperature}
	comp, err := j.complete(ctx, p, first, u)
	if err != nil {
		return choice{}, replyObject{}, err
	}
	ch := comp.choices[0]
	if err := j.unfinished(p, ch); err != nil {
		return choice{}, replyObject{}, err
	}
	if p.schema == nil {
		return ch, replyObject{}, nil
	}
	obj, problem := structuredObject(p.schema, ch.content)
	if problem == nil {
		return ch, obj, nil
	}

	j.log.LogAttrs(ctx, slog.LevelInfo, "judge reply unusable; asking the model to repair it",
		slog.String("judge", j.cfg.Name), slog.String("purpose", p.req.Purpose),
		slog.String("mode", string(j.sendMode(p.mode))), slog.String("problem", problem.Error()))
	repair := call{
		extra: []abi.Message{
			{Role: "assistant", Content: ch.content},
			{Role: "user", Content: repairInstruction(problem)},
		},
		n:           1,
		temperature: p.temperature,
	}
	comp, err = j.complete(ctx, p, repair, u)
	if err != nil {
		return choice{}, replyObject{}, err
	}
	ch2 := comp.choices[0]
	if err := j.unfinished(p, ch2); err != nil {
		return choice{}, replyObject{}, err
	}
	obj, problem2 := structuredObject(p.schema, ch2.content)
	if problem2 != nil {
		return choice{}, replyObject{}, j.errorf(abi.CodeJudge, false,
			"reply is not usable structured output after one repair attempt (%s mode): %v; reply: %s; first reply: %v",
			j.sendMode(p.mode), problem2, excerpt(ch2.content), problem)
	}
	return ch2, obj, nil
}

// sampled is the score fallback for judges without logprobs: several
// samples at the sampling temperature, their mean taken by package score.
// One call with n when the server supports it, separate concurrent calls
// for whatever it did not return.
func (j *Judge) sampled(ctx context.Context, p *plan, u *usage) abi.JudgeResponse {
	temperature := p.sampleTemperature
	var choices []choice
	if j.cfg.SupportsN {
		comp, err := j.complete(ctx, p, call{n: p.samples, temperature: &temperature}, u)
		if err != nil {
			return abi.JudgeResponse{Error: err}
		}
		choices = comp.choices[:min(len(comp.choices), p.samples)]
	}

	missing := p.samples - len(choices)
	extra := make([]choice, missing)
	errs := make([]*abi.Error, missing)
	var wg sync.WaitGroup
	for i := range missing {
		wg.Go(func() {
			resp := j.safely(func() abi.JudgeResponse {
				comp, err := j.complete(ctx, p, call{n: 1, temperature: &temperature}, u)
				if err != nil {
					return abi.JudgeResponse{Error: err}
				}
				extra[i] = comp.choices[0]
				return abi.JudgeResponse{}
			})
			errs[i] = resp.Error
		})
	}
	wg.Wait()
	var firstErr *abi.Error
	failed := 0
	for i := range extra {
		if errs[i] != nil {
			failed++
			if firstErr == nil {
				firstErr = errs[i]
			}
			continue
		}
		choices = append(choices, extra[i])
	}

	var values []int
	var resp abi.JudgeResponse
	var problems []string
	var cut *abi.Error // the first truncated sample
	truncated := 0
	for i, ch := range choices {
		if err := j.unfinished(p, ch); err != nil {
			if err.Code == abi.CodeTruncated {
				truncated++
				if cut == nil {
					cut = err
				}
			}
			problems = append(problems, fmt.Sprintf("sample %d: %s", i+1, strings.TrimPrefix(err.Message, j.prefix())))
			continue
		}
		var obj replyObject
		if p.schema != nil {
			var problem *replyProblem
			if obj, problem = structuredObject(p.schema, ch.content); problem != nil {
				problems = append(problems, fmt.Sprintf("sample %d: %v", i+1, problem))
				continue
			}
		}
		sr, err := score.FromTokens(ch.content, nil, *p.score, scoreField(obj.value, p.score.Field))
		if err != nil {
			problems = append(problems, fmt.Sprintf("sample %d: %v", i+1, err))
			continue
		}
		if len(values) == 0 {
			resp.Content, resp.JSON = ch.content, obj.canonical
		}
		values = append(values, sr.Raw)
	}
	if len(values) == 0 {
		if firstErr != nil {
			return abi.JudgeResponse{Error: firstErr}
		}
		if truncated == len(choices) {
			return abi.JudgeResponse{Error: cut}
		}
		return abi.JudgeResponse{Error: j.errorf(abi.CodeJudge, false, "none of %d samples carries a usable score: %s",
			p.samples, strings.Join(problems, "; "))}
	}
	sr, err := score.FromSamples(values, *p.score)
	if err != nil {
		return abi.JudgeResponse{Error: j.errorf(abi.CodeJudge, false, "sampled scores unusable: %v", err)}
	}
	if j.cfg.Provider.HasLogprobs() {
		sr.Cause = "judge has no logprobs; " + sr.Cause
	} else {
		sr.Cause = j.noLogprobsCause() + "; " + sr.Cause
	}
	if dropped := p.samples - len(values); dropped > 0 {
		sr.Cause += fmt.Sprintf(" (%d of %d samples unusable", dropped, p.samples)
		if failed > 0 {
			sr.Cause += fmt.Sprintf(", %d failed: %s", failed, firstErr.Message)
		}
		sr.Cause += ")"
	}
	resp.Score = &sr
	return resp
}

// noLogprobsCause says why a score was not weighted by logprobs.
func (j *Judge) noLogprobsCause() string {
	if !j.cfg.Provider.HasLogprobs() {
		return "judge has no logprobs (provider " + string(j.cfg.Provider) + " returns none)"
	}
	return "judge has no logprobs (supports_logprobs is false)"
}

// unfinished turns a reply the server says is not whole into an error.
// finish_reason "length" is judge_truncated even when the text parses: the
// server says the model had more to write, so a score or a verdict in it
// may be cut ("1" of "10"), and a repair call, capped the same way, cannot
// help; the fix is max_tokens. A refusal or a content filter is a
// judge_error naming it.
func (j *Judge) unfinished(p *plan, ch choice) *abi.Error {
	switch ch.finishReason {
	case "length":
		limit := fmt.Sprintf("max_tokens %d", p.maxTokens)
		if p.maxTokens == 0 {
			limit = "the server's own limit (no max_tokens was sent)"
		}
		return j.errorf(abi.CodeTruncated, false,
			"the reply was cut off at the token limit (finish_reason \"length\", %s): not used, and a repair cannot help; raise max_tokens; reply: %s",
			limit, excerpt(ch.content))
	case "content_filter":
		return j.errorf(abi.CodeJudge, false, "the server's content filter stopped the reply (finish_reason \"content_filter\"); reply: %s", excerpt(ch.content))
	}
	if ch.content == "" && ch.refusal != "" {
		return j.errorf(abi.CodeJudge, false, "the model refused: %s", excerpt(ch.refusal))
	}
	return nil
}

// integerScore parses a score field's text: any float syntax strconv
// takes, if it holds an integer of at most 1e9 in magnitude.
func integerScore(text string) *int {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return nil
	}
	n := int(f)
	return &n
}

// scoreField reads the integer in the top-level field of a structured
// reply (7, 7.0 and "7" all count; nil when there is none, so package
// score looks in the text instead) from the decoded object rather than its
// bytes: a json.Number is the number's text as the canonical bytes hold
// it, a string the string they hold quoted, and nothing else parses as a
// number in either.
func scoreField(value any, field string) *int {
	fields, ok := value.(map[string]any)
	if !ok {
		return nil
	}
	var text string
	switch v := fields[field].(type) {
	case json.Number:
		text = string(v)
	case string:
		text = strings.TrimSpace(v)
	default:
		return nil
	}
	return integerScore(text)
}

// excerpt shortens a reply for an error message.
func excerpt(s string) string {
	const limit = 200
	s = strings.TrimSpace(s)
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "…"
}
