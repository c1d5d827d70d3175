package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
)

// cached is the top layer: answer from the cache when the mode allows,
// otherwise go on to the shared upstream call and record its reply.
func (j *Judge) cached(ctx context.Context, p *plan) abi.JudgeResponse {
	if j.cacheMode == CacheOff {
		return j.shared(ctx, p, j.accounted)
	}
	resp, ok, readErr := j.lookup(ctx, p)
	if ok {
		return resp
	}
	if readErr != nil && ctx.Err() == nil {
		// Counted once per request, whatever the layers below look up
		// again; summary.json reports the total.
		j.counters.cacheUnreadable.Add(1)
		j.log.LogAttrs(ctx, slog.LevelWarn, "judge cache unreadable; treating it as a miss",
			slog.String("judge", j.cfg.Name), slog.String("error", readErr.Error()))
	}
	if j.cacheMode == CacheReplay {
		if readErr != nil {
			return abi.JudgeResponse{Error: j.errorf(abi.CodeCacheMiss, false,
				"cannot read the cache in replay mode (cache key %.12s…): %v", p.key, readErr)}
		}
		return abi.JudgeResponse{Error: j.errorf(abi.CodeCacheMiss, false,
			"no recorded reply for this request (cache key %.12s…) and the cache is in replay mode; record it with a read-write run first",
			p.key)}
	}
	return j.shared(ctx, p, j.recorded)
}

// recorded is the work of a shared call when the cache is read-write. It
// looks again first: an identical call may have recorded its reply between
// this request's miss and its joining the flight, and finding it here saves
// an upstream call. It records the reply before the callers waiting on it
// are released, so a request arriving just after finds it too.
func (j *Judge) recorded(ctx context.Context, p *plan) abi.JudgeResponse {
	if resp, ok, _ := j.lookup(ctx, p); ok {
		return resp
	}
	resp := j.accounted(ctx, p)
	j.record(ctx, p, resp)
	return resp
}

// lookup returns the recorded reply for p, marked as a cache hit.
func (j *Judge) lookup(ctx context.Context, p *plan) (abi.JudgeResponse, bool, error) {
	resp, ok, err := j.find(ctx, p)
	if !ok {
		return resp, false, err
	}
	j.counters.cacheHits.Add(1)
	// Tokens stay as recorded (they describe the reply); nothing was spent,
	// nothing was sent and nothing waited on the judge now.
	resp.Usage.CacheHit = true
	resp.Usage.USD = 0
	resp.Usage.LatencyMS = 0
	resp.Usage.Calls = 0
	resp.Usage.Attempts = 0
	resp.Usage.Model = j.cfg.Model
	resp.Error = nil
	return resp, true, nil
}

// find reads p's entry. A request that omits the tokens it would get (see
// plan.leansTokens) is also answered by the reply recorded with them, as
// every run before omit_tokens existed recorded it; the tokens are then
// dropped, as the caller does not read them.
func (j *Judge) find(ctx context.Context, p *plan) (abi.JudgeResponse, bool, error) {
	resp, ok, err := j.readEntry(ctx, p.key)
	if !ok && err == nil && p.leansTokens() {
		var full string
		if full, err = p.cacheKey(j.cfg.Model, false); err != nil {
			return abi.JudgeResponse{}, false, fmt.Errorf("cache key: %w", err)
		}
		resp, ok, err = j.readEntry(ctx, full)
	}
	if ok && !p.wantsTokens() {
		resp.Tokens = nil
	}
	return resp, ok, err
}

// readEntry reads and decodes a cache entry. A cache that cannot be read,
// or an entry that cannot be decoded, is an error the caller treats as a
// miss: losing the cache costs money, not correctness. cached reports it.
func (j *Judge) readEntry(ctx context.Context, key string) (abi.JudgeResponse, bool, error) {
	raw, ok, err := j.cache.GetJudge(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up (a stopped run): not a fault of the cache.
			return abi.JudgeResponse{}, false, ctx.Err()
		}
		return abi.JudgeResponse{}, false, fmt.Errorf("cache read failed: %w", err)
	}
	if !ok {
		return abi.JudgeResponse{}, false, nil
	}
	var resp abi.JudgeResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return abi.JudgeResponse{}, false, fmt.Errorf("cache entry %.12s… is not a judge response: %w", key, err)
	}
	return resp, true, nil
}

// record stores a successful reply. Errors are never cached: a failure is
// worth retrying on the next run.
func (j *Judge) record(ctx context.Context, p *plan, resp abi.JudgeResponse) {
	if resp.Error != nil {
		return
	}
	raw, err := json.Marshal(resp)
	if err == nil {
		// The caller's cancellation must not lose a reply already paid for.
		err = j.cache.PutJudge(context.WithoutCancel(ctx), p.key, j.cfg.Model, raw)
	}
	if err != nil {
		j.log.LogAttrs(ctx, slog.LevelWarn, "judge cache write failed",
			slog.String("judge", j.cfg.Name), slog.String("error", err.Error()))
	}
}

// Cached returns the recorded reply for req without calling the judge or
// counting a cache hit: `estimate` uses it to price cached requests as free.
func (j *Judge) Cached(ctx context.Context, req abi.JudgeRequest) (abi.JudgeResponse, bool) {
	return j.CachedSample(ctx, req, 0)
}

// CachedSample is Cached for the sample-th scoring of req (see DoSample).
func (j *Judge) CachedSample(ctx context.Context, req abi.JudgeRequest, sample int) (abi.JudgeResponse, bool) {
	if j.cache == nil || j.cacheMode == CacheOff {
		return abi.JudgeResponse{}, false
	}
	p, perr := j.plan(req, sample)
	if perr != nil {
		return abi.JudgeResponse{}, false
	}
	resp, ok, _ := j.find(ctx, p)
	if !ok {
		return abi.JudgeResponse{}, false
	}
	resp.Usage = abi.Usage{Model: j.cfg.Model, CacheHit: true}
	return resp, true
}
