package judge

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
)

// Judge is one configured judge with its middleware stack. It is safe for
// concurrent use; create one per configured judge and share it.
type Judge struct {
	cfg    Config
	apiKey string
	// secrets are scrubbed from every message: the key and the parts of
	// configured headers taken from the environment.
	secrets []string
	// setupErr fails every upstream call (a header's variable is unset);
	// cache hits are still served.
	setupErr *abi.Error
	// keyProvider and keyEndpoint are the judge's identity in cache keys
	// (empty for provider openai: plan.go).
	keyProvider, keyEndpoint string
	log                      *slog.Logger
	clock                    Clock

	cache     Cache
	cacheMode CacheMode

	flight   singleflight.Group
	flightMu sync.Mutex
	inflight map[string]*flightState
	runners  *runners

	spendLimit float64
	pacer      *pacer
	slots      slots
	limiter    Limiter // nil: pacer and slots
	provider   provider
	schemas    schemaSet
	counters   counters
	price      PriceInfo

	// batcher, when set, sends calls made in a batching context through
	// the provider's batch API (batch.go).
	batcher *batcher

	breaker       breaker
	onUnavailable func(error)
	// modeFloor is the rank (see modeRank) of the strongest structured-
	// output mode the server has not rejected; it only ever weakens.
	modeFloor atomic.Int32
}

// New builds a judge from cfg (defaults applied, then validated).
func New(cfg Config, opts ...Option) (*Judge, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{cacheMode: CacheReadWrite}
	for _, opt := range opts {
		opt(&o)
	}
	if o.cacheMode == CacheReplay && o.cache == nil {
		return nil, fmt.Errorf("judge %q: replay cache mode needs a cache (store)", cfg.Name)
	}
	if o.spendUSD < 0 {
		return nil, fmt.Errorf("judge %q: negative spend limit", cfg.Name)
	}
	if o.getenv == nil {
		o.getenv = os.Getenv
	}
	if o.apiKey == "" && cfg.CredentialEnv() != "" {
		o.apiKey = o.getenv(cfg.CredentialEnv())
	}
	headers, secrets, missing := resolveHeaders(cfg.Headers, o.getenv)
	if len(o.apiKey) >= minSecretLen {
		secrets = append(secrets, o.apiKey)
	}
	if cfg.Provider == judgeconfig.ProviderBedrock {
		// The chain's credentials from the environment; those it finds
		// elsewhere are scrubbed once resolved (bedrock.go).
		for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"} {
			if v := o.getenv(name); len(v) >= minSecretLen {
				secrets = append(secrets, v)
			}
		}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	if o.http == nil {
		o.http = defaultHTTPClient(cfg.MaxConcurrency)
	}
	prov, err := newProvider(cfg, o.http, o.apiKey, headers)
	if err != nil {
		return nil, err
	}
	j := &Judge{
		cfg:        cfg,
		apiKey:     o.apiKey,
		log:        o.logger,
		clock:      o.clock,
		cache:      o.cache,
		cacheMode:  o.cacheMode,
		inflight:   map[string]*flightState{},
		runners:    newRunners(max(cfg.MaxConcurrency, 1)),
		spendLimit: o.spendUSD,
		pacer:      newPacer(cfg),
		slots:      make(slots, cfg.MaxConcurrency),
		provider:   prov,
		secrets:    secrets,
		price:      resolvePrice(cfg),

		onUnavailable: o.onUnavailable,
		limiter:       o.limiter,
	}
	if j.cache == nil {
		j.cacheMode = CacheOff
	}
	if o.batch != nil {
		wire, ok := prov.(batchWire)
		if !ok {
			return nil, fmt.Errorf("judge %q: batch: provider %s has no batch API in this build", cfg.Name, cfg.Provider)
		}
		j.batcher = newBatcher(j, wire, *o.batch)
	}
	if id := cfg.Identity(); id.Provider != judgeconfig.ProviderOpenAI {
		j.keyProvider, j.keyEndpoint = string(id.Provider), id.Endpoint
	}
	if missing != nil {
		missing.Message = j.prefix() + missing.Message
		j.setupErr = missing
	}
	return j, nil
}

// defaultHTTPClient keeps enough idle connections for max_concurrency
// requests, so a busy judge does not reconnect on every call. No client
// timeout: each attempt has its own context deadline.
//
// Its connections read through a 64 KiB buffer, not net/http's 4 KiB: a
// reply with top_logprobs is tens of kilobytes, and a chunked one (most
// servers' and proxies' choice) is read through that buffer, one system
// call per 4 KiB — 13 reads for the 51 KB bench reply, one or two now.
func defaultHTTPClient(maxConcurrency int) *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok { // someone replaced the process default; start from scratch
		t = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = max(maxConcurrency, 2)
	t.MaxIdleConns = max(t.MaxIdleConns, maxConcurrency)
	t.ReadBufferSize = replyReadBuffer
	return &http.Client{Transport: t}
}

// replyReadBuffer is the read buffer of the judge's connections.
const replyReadBuffer = 64 << 10

// Identity says which model at which service answers: provider, model and
// endpoint (judgeconfig.Identity), for run descriptions and summaries.
func (j *Judge) Identity() judgeconfig.Identity { return j.cfg.Identity() }

// Config returns the judge's configuration with defaults applied.
func (j *Judge) Config() Config { return j.cfg }

// Name returns the judge's configured name.
func (j *Judge) Name() string { return j.cfg.Name }

// Model returns the judge's model.
func (j *Judge) Model() string { return j.cfg.Model }

// Do answers one request. It never panics and never returns a Go error:
// faults are in resp.Error (judge_error, cache_miss, budget_exhausted, …),
// and resp.Usage is always filled in.
func (j *Judge) Do(ctx context.Context, req abi.JudgeRequest) abi.JudgeResponse {
	return j.DoSample(ctx, req, 0)
}

// DoSample answers the sample-th scoring of req: a metric configured with
// samples: N asks the same request N times, and each sample is a call (and
// a cache entry) of its own, so a cached run replays the same spread and a
// sample is never answered with another's reply. Sample 0 is Do.
func (j *Judge) DoSample(ctx context.Context, req abi.JudgeRequest, sample int) abi.JudgeResponse {
	defer j.notifyUnavailable()
	j.counters.requests.Add(1)
	resp := j.safely(func() abi.JudgeResponse {
		p, err := j.plan(req, sample)
		if err != nil {
			return abi.JudgeResponse{Error: err}
		}
		return j.cached(ctx, p)
	})
	if resp.Usage.Model == "" {
		resp.Usage.Model = j.cfg.Model
	}
	if resp.Error != nil {
		j.counters.errors.Add(1)
		resp.Content, resp.JSON, resp.Tokens, resp.Score = "", nil, nil, nil
	}
	return resp
}

// safely runs f, turning a panic into a judge_error response: a bug in the
// judge must fail one request, not the run. Every goroutine the judge
// starts runs its work through it.
func (j *Judge) safely(f func() abi.JudgeResponse) (resp abi.JudgeResponse) {
	defer func() {
		if r := recover(); r != nil {
			j.log.Error("judge panicked", slog.String("judge", j.cfg.Name), slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			resp = abi.JudgeResponse{Error: j.errorf(abi.CodeJudge, false, "internal error: %v", r)}
		}
	}()
	return f()
}

// Batch answers reqs concurrently, within the judge's limits, in order.
func (j *Judge) Batch(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(reqs))
	// max_concurrency workers keep every upstream slot busy; more would only
	// queue on the slots.
	workers := min(len(reqs), j.cfg.MaxConcurrency)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(reqs) {
					return
				}
				out[i] = j.Do(ctx, reqs[i])
			}
		})
	}
	wg.Wait()
	return out
}
