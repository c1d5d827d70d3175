package judge

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// CacheMode says how a judge uses its cache.
type CacheMode int

const (
	// CacheReadWrite answers from the cache when it can and records every
	// successful upstream reply. The default.
	CacheReadWrite CacheMode = iota
	// CacheOff neither reads nor writes the cache.
	CacheOff
	// CacheReplay answers from the cache only; a miss is an abi.CodeCacheMiss
	// error and no request leaves the machine. This is how a run is replayed
	// offline.
	CacheReplay
)

// String names the mode as configuration spells it.
func (m CacheMode) String() string {
	switch m {
	case CacheReadWrite:
		return "read-write"
	case CacheOff:
		return "off"
	case CacheReplay:
		return "replay"
	}
	return "unknown"
}

// ParseCacheMode reads "read-write" (or "rw", ""), "off", "replay".
func ParseCacheMode(s string) (CacheMode, bool) {
	switch s {
	case "", "read-write", "readwrite", "rw":
		return CacheReadWrite, true
	case "off", "none":
		return CacheOff, true
	case "replay", "replay-only":
		return CacheReplay, true
	}
	return 0, false
}

// Cache is what the judge needs of a persistent cache; *store.Store (package
// host/store) has it.
type Cache interface {
	GetJudge(ctx context.Context, key string) ([]byte, bool, error)
	PutJudge(ctx context.Context, key, model string, value []byte) error
}

// Clock is time as the judge sees it. Tests inject a fake one so backoff
// and rate-limit waits are asserted, not slept.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, returning ctx.Err() in that case.
	Sleep(ctx context.Context, d time.Duration) error
}

// Option configures a Judge.
type Option func(*options)

type options struct {
	cache     Cache
	cacheMode CacheMode
	logger    *slog.Logger
	clock     Clock
	http      *http.Client
	apiKey    string
	getenv    func(string) string
	spendUSD  float64

	onUnavailable func(error)
	limiter       Limiter
	batch         *BatchOptions
}

// WithCache sets the persistent cache and how it is used.
func WithCache(c Cache, mode CacheMode) Option {
	return func(o *options) { o.cache, o.cacheMode = c, mode }
}

// Limiter paces a judge's upstream calls in place of its own
// requests_per_minute, tokens_per_minute and max_concurrency: one budget
// shared by several processes (host/internal/cluster). Acquire blocks
// until one call estimated at tokens may start and returns the function
// that ends it (called once, when the call, retries included, is over).
type Limiter interface {
	Acquire(ctx context.Context, tokens int) (release func(), err error)
}

// WithLimiter replaces the judge's own rate and concurrency limits with l.
func WithLimiter(l Limiter) Option {
	return func(o *options) { o.limiter = l }
}

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithClock replaces the real clock (backoff and rate-limit waits, latency).
func WithClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithHTTPClient sets the HTTP client; the default is a dedicated client
// with connection pooling sized to max_concurrency.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.http = c }
}

// WithAPIKey passes the credential the caller resolved (the API key, or an
// azure judge's Entra token). Without it New reads the environment
// variable the config names (Config.CredentialEnv).
func WithAPIKey(key string) Option {
	return func(o *options) { o.apiKey = key }
}

// WithGetenv sets where the environment is read from (the key when no
// WithAPIKey, a header's ${VAR} parts); the default is os.Getenv.
func WithGetenv(getenv func(string) string) Option {
	return func(o *options) { o.getenv = getenv }
}

// WithSpendLimit makes the judge refuse new upstream requests, with an
// abi.CodeBudget error, once it has spent usd. Requests already in flight
// finish; cache hits are always served. 0 means no limit.
func WithSpendLimit(usd float64) Option {
	return func(o *options) { o.spendUSD = usd }
}

// OnUnavailable sets a function called once, when the judge's breaker
// opens: after a few calls in a row failed in a way retrying cannot fix
// (connection refused, no such host, TLS, HTTP 401/403/404). The judge
// then fails every request at once with judge_unavailable; err is that
// error, naming the cause. f runs on the goroutine of a request that
// finished after the breaker opened (the one that tripped it, once its
// response and usage are complete) and must not block (cancelling the
// run's context is what it is for); Judge.Unavailable reports the same
// error at any time.
func OnUnavailable(f func(err error)) Option {
	return func(o *options) { o.onUnavailable = f }
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
