package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/lockfile"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugincache"
	"github.com/agentanvil/anvil/host/internal/pluginsource"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// tagCheckTimeout bounds a run's check that a locked tag has not moved.
const tagCheckTimeout = 10 * time.Second

// pluginSource is where a loaded plugin came from, for validate's report.
type pluginSource struct {
	id          string // oci://…@sha256:… or the local path
	signer      string // "team-a (ed25519:…)" or "unsigned"
	conformance string // the accepted attestation, when the policy required one
}

// distribution is what loading needs to find plugins and decide on them:
// the trust policy, and — when a plugin is configured by reference — the
// lock, the plugin cache and a registry client.
type distribution struct {
	policy *trust.Policy
	lock   *lockfile.Lock
	source *pluginsource.Source
	cfg    *config.Config
}

func (e *Engine) openDistribution() (*distribution, error) {
	policy, err := pluginsource.Policy(e.cfg)
	if err != nil {
		return nil, err
	}
	d := &distribution{policy: policy, cfg: e.cfg}
	anyRef := false
	for _, pc := range e.cfg.Plugins {
		anyRef = anyRef || pc.Ref != ""
	}
	if !anyRef {
		return d, nil
	}
	lockPath := lockfile.Path(e.cfg.File)
	d.lock, err = lockfile.Read(lockPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: plugins are configured by oci:// reference but there is no %s beside it: run `anvil-host lock` (it resolves each tag to a digest); nothing was loaded", e.cfg.File, lockPath)
	}
	if err != nil {
		return nil, err
	}
	dir := e.opts.PluginCacheDir
	if dir == "" {
		if dir, err = plugincache.DefaultDir(e.opts.Getenv); err != nil {
			return nil, err
		}
	}
	cache, err := plugincache.Open(dir)
	if err != nil {
		return nil, err
	}
	client := e.opts.Registry
	if client == nil {
		if client, err = oci.NewClient(); err != nil {
			return nil, err
		}
	}
	d.source = &pluginsource.Source{Client: client, Cache: cache, Logger: e.logger, TagCheckTimeout: tagCheckTimeout,
		Conformance: policy.RequireConformance}
	return d, nil
}

// resolve finds the module of plugin name: the local file its path names
// (pinned by sha256 or sha256_file), or the reference anvil.lock pins.
func (d *distribution) resolve(ctx context.Context, name string, pc *config.Plugin) (pluginsource.Resolved, error) {
	if pc.Ref == "" {
		digest, err := pluginDigest(d.cfg, pc)
		if err != nil {
			return pluginsource.Resolved{}, err
		}
		return pluginsource.Local(d.cfg.Resolve(pc.Path), digest)
	}
	return d.source.Pull(ctx, name, pc, d.lock.Plugins[name], pc.Limits.WithDefaults().MaxModuleBytes)
}

// PluginSource says where the configured plugin name was loaded from
// (oci://REGISTRY/REPO@sha256:… or its path) and who signed it
// ("team-a (ed25519:…)" or "unsigned").
func (e *Engine) PluginSource(name string) (id, signer string, ok bool) {
	s, ok := e.sources[name]
	return s.id, s.signer, ok
}

// PluginConformance is the conformance attestation the trust policy
// accepted for plugin name ("30 passed, 0 failed, 1 skipped by anvil-host
// v1, attested by team-a (ed25519:…)"); "" when it required none.
func (e *Engine) PluginConformance(name string) string { return e.sources[name].conformance }
