package judge

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentanvil/anvil/abi"
)

// Totals is what a judge has done since it was created.
type Totals struct {
	// Requests is the number of Do calls (a Batch counts each request).
	Requests int64 `json:"requests"`
	// CacheHits were answered from the cache without an upstream call.
	CacheHits int64 `json:"cache_hits"`
	// Shared were answered by joining an identical request already in flight.
	Shared int64 `json:"shared"`
	// Calls is upstream chat completions sent (a repair or a sample is a
	// call; a retry is not, nor is a send the server rejected for its
	// structured-output mode and that is made again in a weaker one: those
	// are attempts of the one call; a request refused before sending makes
	// none). It equals the sum of Usage.Calls over the judge's responses.
	Calls int64 `json:"calls"`
	// Attempts is HTTP attempts, retries included.
	Attempts int64 `json:"attempts"`
	// InputTokens and OutputTokens are as the server reported them, for
	// upstream calls only: cache hits spent nothing. A reply without a
	// usage block is counted at the judge's estimate (see UsageUnknown).
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens of InputTokens were read from the provider's
	// prompt cache, as it reported them (OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's
	// cache_read_input_tokens), and CacheWriteInputTokens written to it
	// (Anthropic's cache_creation_input_tokens); each priced at its rate.
	CachedInputTokens     int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens,omitempty"`
	// UsageUnknown is the calls whose reply had no usage block.
	UsageUnknown int64 `json:"usage_unknown"`
	// CacheUnreadable is cache reads that failed or entries that did not
	// decode; each was treated as a miss.
	CacheUnreadable int64 `json:"cache_unreadable"`
	// USD is the cost of those tokens at the configured prices.
	USD float64 `json:"usd"`
	// Errors is the number of requests answered with an error.
	Errors int64 `json:"errors"`
}

// counters maintains Totals with atomics: every request updates them, and a
// mutex would serialise the whole judge on bookkeeping.
type counters struct {
	requests, cacheHits, shared, calls, attempts atomic.Int64
	inputTokens, outputTokens, errors            atomic.Int64
	cachedInputTokens, cacheWriteInputTokens     atomic.Int64
	usageUnknown, cacheUnreadable                atomic.Int64
	usdBits                                      atomic.Uint64 // float64 bits
}

func (c *counters) addUSD(usd float64) {
	for {
		old := c.usdBits.Load()
		next := math.Float64bits(math.Float64frombits(old) + usd)
		if c.usdBits.CompareAndSwap(old, next) {
			return
		}
	}
}

func (c *counters) usd() float64 { return math.Float64frombits(c.usdBits.Load()) }

// Totals returns a snapshot of what the judge has done.
func (j *Judge) Totals() Totals {
	c := &j.counters
	return Totals{
		Requests:              c.requests.Load(),
		CacheHits:             c.cacheHits.Load(),
		Shared:                c.shared.Load(),
		Calls:                 c.calls.Load(),
		Attempts:              c.attempts.Load(),
		InputTokens:           c.inputTokens.Load(),
		OutputTokens:          c.outputTokens.Load(),
		CachedInputTokens:     c.cachedInputTokens.Load(),
		CacheWriteInputTokens: c.cacheWriteInputTokens.Load(),
		UsageUnknown:          c.usageUnknown.Load(),
		CacheUnreadable:       c.cacheUnreadable.Load(),
		USD:                   c.usd(),
		Errors:                c.errors.Load(),
	}
}

// usage accumulates the upstream calls of one request (the first reply, a
// repair, samples); samples run concurrently, hence the mutex.
type usage struct {
	mu       sync.Mutex
	calls    int
	tokens   tokens
	attempts int
	unknown  bool
	// usd is the calls' cost, each at its price (a batched call's is
	// the batch price).
	usd float64
}

// add counts one call sent upstream.
func (u *usage) add(t tokens, attempts int, unknown bool) {
	u.mu.Lock()
	u.calls++
	u.tokens.add(t)
	u.attempts += attempts
	u.unknown = u.unknown || unknown
	u.mu.Unlock()
}

// addAttempts counts HTTP attempts of a call not yet finished: a call the
// server rejected for its structured-output mode, which is made again.
func (u *usage) addAttempts(attempts int) {
	u.mu.Lock()
	u.attempts += attempts
	u.mu.Unlock()
}

// accounted runs the request's upstream work and fills in its Usage: the
// budget/accounting layer. Per-call totals are counted as calls complete
// (see complete), so a spend limit sees money as it is spent.
func (j *Judge) accounted(ctx context.Context, p *plan) abi.JudgeResponse {
	start := j.clock.Now()
	var u usage
	resp := j.execute(ctx, p, &u)
	u.mu.Lock()
	defer u.mu.Unlock()
	resp.Usage = j.spent(&u, start)
	if j.log.Enabled(ctx, slog.LevelDebug) {
		attrs := []slog.Attr{
			slog.String("judge", j.cfg.Name), slog.String("purpose", p.req.Purpose),
			slog.Int("input_tokens", u.tokens.in), slog.Int("output_tokens", u.tokens.out),
			slog.Int("cached_input_tokens", u.tokens.cached),
			slog.Float64("usd", resp.Usage.USD), slog.Float64("latency_ms", resp.Usage.LatencyMS),
			slog.Int("calls", u.calls), slog.Int("attempts", u.attempts),
		}
		if u.unknown {
			attrs = append(attrs, slog.Bool("usage_unknown", true))
		}
		if resp.Error != nil {
			attrs = append(attrs, slog.String("error", string(resp.Error.Code)))
		}
		j.log.LogAttrs(ctx, slog.LevelDebug, "judge request", attrs...)
	}
	return resp
}

// spent is the Usage of the calls u counted since start. Its caller holds
// u.mu.
func (j *Judge) spent(u *usage, start time.Time) abi.Usage {
	return abi.Usage{
		Model:                 j.cfg.Model,
		InputTokens:           u.tokens.in,
		OutputTokens:          u.tokens.out,
		CachedInputTokens:     u.tokens.cached,
		CacheWriteInputTokens: u.tokens.written,
		USD:                   u.usd,
		Unpriced:              u.calls > 0 && !j.price.Known,
		LatencyMS:             float64(j.clock.Now().Sub(start)) / float64(time.Millisecond),
		Calls:                 u.calls,
		Attempts:              u.attempts,
		UsageUnknown:          u.unknown,
	}
}
