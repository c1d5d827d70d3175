package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/store"
)

// kindRef is where a kind lives.
type kindRef struct {
	plugin plugin.Plugin
	desc   abi.KindDescriptor
	source string // config plugin name, or "builtin"
	// builtin: a first-party kind linked into the host, which a
	// configured plugin providing the same kind replaces.
	builtin bool
}

// New loads a configuration: judges, store, plugins (digests verified),
// metrics (params checked against each kind's schema, DAGs validated).
// Every problem found is reported, each naming file:line where known.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	e := &Engine{cfg: cfg, opts: opts, logger: opts.Logger, plugins: map[string]plugin.Plugin{},
		digests: map[string]string{}, sources: map[string]pluginSource{}, kinds: map[string]kindRef{}}
	ok := false
	defer func() {
		if !ok {
			e.Close(ctx)
		}
	}()
	if err := e.openStore(ctx); err != nil {
		return nil, err
	}
	if err := e.buildJudges(); err != nil {
		return nil, err
	}
	if err := e.loadPlugins(ctx); err != nil {
		return nil, err
	}
	if err := e.resolveMetrics(); err != nil {
		return nil, err
	}
	e.hash = cfg.Hash(e.digests)
	e.resolveIdentity()
	ok = true
	return e, nil
}

func (e *Engine) cacheMode() string {
	mode := e.opts.Cache
	if mode == "" {
		mode = e.cfg.Defaults.Cache
	}
	if mode == "" {
		mode = "rw"
	}
	return mode
}

// DefaultStore is where the store lives, relative to the config file's
// directory, when neither --store nor defaults.store names it.
const DefaultStore = ".anvil/store.db"

// StorePath is the one rule for where the store is: the --store flag as
// given; else defaults.store, relative to the config file; else
// .anvil/store.db in the config file's directory (the current directory
// when there is no config file). run, estimate, validate and cache all use it.
func StorePath(cfg *config.Config, flag string) string {
	if flag != "" {
		return flag
	}
	if cfg == nil {
		return DefaultStore
	}
	if cfg.Defaults.Store != "" {
		return cfg.Resolve(cfg.Defaults.Store)
	}
	return cfg.Resolve(DefaultStore)
}

// openStore opens the judge cache. A store that cannot be opened (corrupt,
// unreadable) does not stop a read-write run: it goes on without a cache,
// warns, and says so in summary.json. Replay mode needs the store and
// fails.
func (e *Engine) openStore(ctx context.Context) error {
	if e.cacheMode() == "off" || e.opts.JudgeCache != nil {
		return nil
	}
	path := StorePath(e.cfg, e.opts.StorePath)
	st, err := store.Open(ctx, path)
	if err != nil {
		if e.cacheMode() == "replay" {
			return fmt.Errorf("open store %s (needed by --cache replay): %w", path, err)
		}
		e.storeErr = fmt.Sprintf("store %s unusable, ran without a judge cache: %v (`anvil-host cache clear --store %s` resets it)", path, err, path)
		e.logger.Warn("judge cache unusable; running without it", "store", path, "err", err)
		return nil
	}
	e.store = st
	return nil
}

// defaultJudgeName is used when the config has no judges section: the
// judge then comes from OPENAI_BASE_URL, OPENAI_API_KEY and ANVIL_JUDGE_MODEL.
const defaultJudgeName = "default"

// buildJudges creates a client per configured judge. Missing base URL, key
// or model fall back to OPENAI_BASE_URL, OPENAI_API_KEY and
// ANVIL_JUDGE_MODEL, as the OpenAI SDKs do. A judge with no key that is not
// a local server is recorded as unavailable: its metrics are skipped with a
// message saying how to configure it, and deterministic metrics still run.
func (e *Engine) buildJudges() error {
	e.judges = &judges{byName: map[string]*judge.Judge{}, unavailable: map[string]string{}, recorded: map[string]string{}, recordings: map[string]string{}}
	cfgs := e.cfg.Judges
	if len(cfgs) == 0 {
		cfgs = map[string]*judge.Config{defaultJudgeName: {Name: defaultJudgeName}}
		if e.cfg.Defaults.Judge == "" {
			e.cfg.Defaults.Judge = defaultJudgeName
		}
	}
	mode := map[string]judge.CacheMode{"off": judge.CacheOff, "rw": judge.CacheReadWrite, "replay": judge.CacheReplay}[e.cacheMode()]
	names := make([]string, 0, len(cfgs))
	for n := range cfgs {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []string
	for _, name := range names {
		jc := *cfgs[name]
		jc.Name = name
		openaiWire := jc.Provider == "" || jc.Provider == judgeconfig.ProviderOpenAI
		if jc.BaseURL == "" && openaiWire {
			jc.BaseURL = e.opts.Getenv("OPENAI_BASE_URL")
		}
		if jc.BaseURL == "" && openaiWire {
			jc.BaseURL = "https://api.openai.com/v1"
		}
		if jc.APIKeyEnv == "" && jc.EntraTokenEnv == "" {
			jc.APIKeyEnv = jc.Provider.DefaultAPIKeyEnv()
		}
		if jc.Model == "" && openaiWire {
			jc.Model = e.opts.Getenv("ANVIL_JUDGE_MODEL")
		}
		if jc.Model == "" && openaiWire {
			jc.Model = "gpt-4o-mini"
		}
		jc = jc.WithDefaults()
		if err := jc.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", e.cfg.File, err))
			continue
		}
		key := e.opts.Getenv(jc.CredentialEnv())
		// Replay as the coordinator does, whatever this environment says
		// of the key or the judge's URL.
		forced := jc.OfflineRecording != "" && slices.Contains(e.opts.ReplayJudges, name)
		if forced {
			key = ""
		}
		jopts := []judge.Option{judge.WithLogger(e.logger), judge.WithAPIKey(key), judge.WithGetenv(e.opts.Getenv), judge.OnUnavailable(e.judges.down)}
		if e.opts.JudgeCache != nil && e.cacheMode() != "off" {
			jopts = append(jopts, judge.WithCache(e.opts.JudgeCache, mode))
		} else if e.store != nil {
			jopts = append(jopts, judge.WithCache(e.store, mode))
		}
		if e.opts.JudgeLimits != nil {
			if l := e.opts.JudgeLimits(name); l != nil {
				jopts = append(jopts, judge.WithLimiter(l))
			}
		}
		// A bedrock judge's credentials come from the AWS chain, resolved
		// at its first call: it is never short of a key here.
		noKey := key == "" && jc.Provider.UsesAPIKey()
		if forced || (noKey && !isLocal(jc.BaseURL) && e.cacheMode() != "replay") {
			if jc.OfflineRecording != "" {
				path := e.cfg.Resolve(jc.OfflineRecording)
				rec, err := loadRecording(path)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: judge %s: %v", e.cfg.File, name, err))
					continue
				}
				e.judges.recordings[name] = rec.digest
				e.judges.recorded[name] = fmt.Sprintf(
					"judge %q has no API key in $%s: its answers are REPLAYED from %s, %s; set $%s to call the real judge",
					name, jc.CredentialEnv(), jc.OfflineRecording, rec.note, jc.CredentialEnv())
				jopts = append(jopts, judge.WithCache(rec, judge.CacheReplay))
			} else {
				// Still built: estimate prices its requests without calling it.
				advice := "set it, or point OPENAI_BASE_URL at a local OpenAI-compatible server"
				if !openaiWire {
					advice = "set it"
				}
				e.judges.unavailable[name] = fmt.Sprintf(
					"judge %q is not configured: no API key in $%s (%s); `anvil-host estimate` shows what it would cost",
					name, jc.CredentialEnv(), advice)
			}
		}
		if b := e.opts.Batch; (b != nil && b.All && jc.Provider.HasBatch()) || jc.Batch {
			bo := judge.BatchOptions{}
			if b != nil {
				bo = judge.BatchOptions{RetryLive: b.RetryLive, PollEvery: b.PollEvery, FlushAfter: b.FlushAfter, MaxRequests: b.MaxRequests}
			}
			if e.store != nil {
				bo.State = e.store
			}
			jopts = append(jopts, judge.WithBatch(bo))
			e.batching = true
		}
		j, err := judge.New(jc, jopts...)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: judge %s: %v", e.cfg.File, name, err))
			continue
		}
		e.judges.byName[name] = j
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// isLocal reports whether a base URL is a server on this machine, which
// needs no key (Ollama, llama.cpp, vLLM, LM Studio).
func isLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
