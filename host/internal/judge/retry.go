package judge

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// Backoff bounds. Full jitter: the wait before retry k is uniform in
// [0, min(backoffCap, backoffBase·2^(k-1))], which spreads a herd of
// clients that failed together.
const (
	backoffBase = 500 * time.Millisecond
	backoffCap  = 30 * time.Second
	// maxRetryAfter is the longest server-requested wait we honour; a
	// server asking for more is treated as down for this run.
	maxRetryAfter = 2 * time.Minute
)

// withRetry makes up to MaxRetries+1 attempts, each under the per-attempt
// timeout, retrying 429, 5xx, timeouts and connection errors (a refused
// connection only once) and nothing else: not 4xx, not a host that does
// not exist, not a TLS failure. It returns the completion or the last failure, and the attempts made.
func (j *Judge) withRetry(ctx context.Context, body []byte, need openaiwire.Need) (completion, int, *failure) {
	var c completion
	attempts, f := j.retrying(ctx, func(actx context.Context) *failure {
		var f *failure
		c, f = j.attempt(actx, body, need)
		return f
	})
	if f != nil {
		return completion{}, attempts, f
	}
	return c, attempts, nil
}

// retrying makes the attempts of one call (try, each under the
// per-attempt timeout) as withRetry says, for any kind of call.
func (j *Judge) retrying(ctx context.Context, try func(context.Context) *failure) (int, *failure) {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, j.cfg.Timeout.Std())
		f := try(actx)
		cancel()
		if f == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, &failure{kind: failCancelled, detail: ctx.Err().Error()}
		}
		if !f.retryable() || attempt > f.maxRetries(j.cfg.MaxRetries) {
			return attempt, f
		}
		delay := backoff(attempt)
		if f.hasRetryAfter {
			if f.retryAfter > maxRetryAfter {
				f.detail = strings.TrimSpace(f.detail + " (server asked to retry after " + f.retryAfter.String() + ", longer than anvil waits)")
				return attempt, f
			}
			delay = f.retryAfter
		}
		// A refused connection is retried once and then counts towards
		// the breaker, which gives the one WARN for a judge that is down.
		level := slog.LevelWarn
		if f.unfixable() {
			level = slog.LevelInfo
		}
		j.log.LogAttrs(ctx, level, "judge attempt failed; retrying",
			slog.String("judge", j.cfg.Name), slog.String("model", j.cfg.Model),
			slog.Int("attempt", attempt), slog.Int("status", f.status),
			slog.String("problem", j.redact(f.summary())), slog.Duration("wait", delay))
		if err := j.clock.Sleep(ctx, delay); err != nil {
			return attempt, &failure{kind: failCancelled, detail: err.Error()}
		}
	}
}

// backoff is the full-jitter wait before retrying after attempt.
func backoff(attempt int) time.Duration {
	ceiling := backoffBase << min(attempt-1, 16)
	if ceiling <= 0 || ceiling > backoffCap {
		ceiling = backoffCap
	}
	return rand.N(ceiling + 1)
}

// retryAfter reads how long the server asked us to wait: retry-after-ms
// (OpenAI's precise variant), else Retry-After in seconds or as an HTTP
// date, else the reset of an exhausted Anthropic rate limit.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return rateLimitReset(h, now)
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// anthropicLimits are the rate limits Anthropic reports in
// anthropic-ratelimit-<limit>-remaining and -reset (RFC 3339).
var anthropicLimits = []string{"requests", "tokens", "input-tokens", "output-tokens"}

// rateLimitReset is the wait until the latest reset among the Anthropic
// limits that are exhausted (remaining 0): the call cannot succeed before
// each has reset. Used when the server sent no Retry-After.
func rateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	var wait time.Duration
	found := false
	for _, limit := range anthropicLimits {
		prefix := "Anthropic-Ratelimit-" + limit
		if strings.TrimSpace(h.Get(prefix+"-Remaining")) != "0" {
			continue
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get(prefix+"-Reset")))
		if err != nil {
			continue
		}
		found = true
		wait = max(wait, at.Sub(now))
	}
	return max(wait, 0), found
}

// googleRetryDelay reads the wait a Google API asks for in its error body
// rather than a header (the Gemini API's 429 RESOURCE_EXHAUSTED): the
// retryDelay of a google.rpc.RetryInfo among error.details ("37s").
func googleRetryDelay(body []byte) (time.Duration, bool) {
	if !bytes.Contains(body, []byte("google.rpc.RetryInfo")) {
		return 0, false
	}
	var e struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e, lenientJSON) != nil {
		return 0, false
	}
	for _, d := range e.Error.Details {
		if d.Type != "type.googleapis.com/google.rpc.RetryInfo" {
			continue
		}
		if wait, err := time.ParseDuration(strings.TrimSpace(d.RetryDelay)); err == nil && wait >= 0 {
			return wait, true
		}
	}
	return 0, false
}
