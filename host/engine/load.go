package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/config"
	"github.com/agentanvil/anvil/host/judge"
	"github.com/agentanvil/anvil/host/plugin"
	"github.com/agentanvil/anvil/host/store"
	dagkinds "github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/sdk"
)

// kindRef is where a kind lives.
type kindRef struct {
	plugin plugin.Plugin
	desc   abi.KindDescriptor
	source string // config plugin name, or "builtin"
}

// FirstParty are the kinds linked into the host.
func FirstParty() []*sdk.Plugin {
	return []*sdk.Plugin{geval.Plugin(), dagkinds.Plugin(), rag.Plugin()}
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
		digests: map[string]string{}, kinds: map[string]kindRef{}}
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

// DefaultStore is the store path when neither the config nor the command
// line names one: per working directory, like a build cache.
const DefaultStore = ".anvil/store.db"

func (e *Engine) openStore(ctx context.Context) error {
	if e.cacheMode() == "off" {
		return nil
	}
	path := e.opts.StorePath
	if path == "" {
		path = e.cfg.Resolve(e.cfg.Defaults.Store)
	}
	if path == "" {
		path = DefaultStore
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
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
	e.judges = &judges{byName: map[string]*judge.Judge{}, unavailable: map[string]string{}}
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
		if jc.BaseURL == "" {
			jc.BaseURL = e.opts.Getenv("OPENAI_BASE_URL")
		}
		if jc.BaseURL == "" {
			jc.BaseURL = "https://api.openai.com/v1"
		}
		if jc.APIKeyEnv == "" {
			jc.APIKeyEnv = "OPENAI_API_KEY"
		}
		if jc.Model == "" {
			jc.Model = e.opts.Getenv("ANVIL_JUDGE_MODEL")
		}
		if jc.Model == "" {
			jc.Model = "gpt-4o-mini"
		}
		jc = jc.WithDefaults()
		if err := jc.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", e.cfg.File, err))
			continue
		}
		key := e.opts.Getenv(jc.APIKeyEnv)
		if key == "" && !isLocal(jc.BaseURL) && e.cacheMode() != "replay" {
			// Still built: estimate prices its requests without calling it.
			e.judges.unavailable[name] = fmt.Sprintf(
				"judge %q is not configured: no API key in $%s (set it, or point OPENAI_BASE_URL at a local OpenAI-compatible server); `anvil-host estimate` shows what it would cost",
				name, jc.APIKeyEnv)
		}
		jopts := []judge.Option{judge.WithLogger(e.logger), judge.WithAPIKey(key)}
		if e.store != nil {
			jopts = append(jopts, judge.WithCache(e.store, mode))
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
