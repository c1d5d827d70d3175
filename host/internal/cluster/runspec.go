package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
)

// openRun builds the engine a run's cases are evaluated with: the
// coordinator's config file, its plugins fetched by digest (every byte
// checked against it), and its once-per-run work adopted. A run this
// worker cannot evaluate exactly as the coordinator would — another ABI,
// built-in kinds of other source, another config hash, a judge resolved
// otherwise in this environment (another model, endpoint or setting), judges
// it cannot call that the coordinator can — is refused with the reason.
func (w *Worker) openRun(ctx context.Context, desc *RunDescription) (*engine.Engine, func(), error) {
	if desc.ABIMajor != w.stamp.abiMajor || desc.ABIMinor != w.stamp.abiMinor {
		return nil, nil, fmt.Errorf("run %s speaks ABI %d.%d, this worker %d.%d", desc.RunID, desc.ABIMajor, desc.ABIMinor, w.stamp.abiMajor, w.stamp.abiMinor)
	}
	if diff := identity.Diff(identity.New(nil, desc.Identity.Kinds), identity.New(nil, w.stamp.kinds), "coordinator", "worker"); diff != nil {
		return nil, nil, fmt.Errorf("run %s: this worker's host is built from other sources: %s", desc.RunID, strings.Join(diff, "; "))
	}
	dir, err := os.MkdirTemp("", "anvil-run-"+desc.RunID+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", desc.RunID, err)
	}
	cleanupDir := func() { os.RemoveAll(dir) }
	cfg, err := config.Parse(filepath.Join(dir, desc.ConfigName), desc.ConfigYAML)
	if err != nil {
		cleanupDir()
		return nil, nil, fmt.Errorf("run %s: config: %w", desc.RunID, err)
	}
	if len(cfg.Plugins) != len(desc.Plugins) {
		cleanupDir()
		return nil, nil, fmt.Errorf("run %s: the config names %d plugins, the run pins %d", desc.RunID, len(cfg.Plugins), len(desc.Plugins))
	}
	for _, name := range sortedNames(cfg.Plugins) {
		digest, ok := desc.Plugins[name]
		if !ok {
			cleanupDir()
			return nil, nil, fmt.Errorf("run %s: plugin %s has no digest in the run", desc.RunID, name)
		}
		path, err := w.fetch(ctx, dir, "plugin "+name, digest, maxPlugin)
		if err != nil {
			cleanupDir()
			return nil, nil, fmt.Errorf("run %s: %w", desc.RunID, err)
		}
		pc := cfg.Plugins[name]
		pc.Path, pc.SHA256, pc.SHA256File = path, digest, ""
	}
	if err := w.placeRecordings(ctx, dir, cfg, desc); err != nil {
		cleanupDir()
		return nil, nil, fmt.Errorf("run %s: %w", desc.RunID, err)
	}
	cfg.Dataset = "" // cases come from the queue
	cfg.Defaults.OutputDir = ""
	opts := engine.Options{Logger: w.log, Cache: desc.CacheMode, JudgeCache: w.c.judgeCache(),
		Getenv: w.opts.Getenv, CompileCacheDir: w.opts.CompileCacheDir, ReplayJudges: sortedNames(desc.Recordings)}
	if desc.Budget {
		opts.JudgeLimits = newPermitClient(ctx, w.c, desc.RunID, w.opts.Name).limiter
	}
	eng, err := engine.New(ctx, cfg, opts)
	if err != nil {
		cleanupDir()
		return nil, nil, fmt.Errorf("run %s: load: %w", desc.RunID, err)
	}
	cleanup := func() {
		eng.Close(context.WithoutCancel(ctx))
		cleanupDir()
	}
	diff := identity.Diff(desc.Identity, eng.Identity(), "coordinator", "worker")
	switch {
	case eng.ConfigHash() != desc.ConfigHash:
		err = fmt.Errorf("run %s: config hash here is %s, the coordinator's %s", desc.RunID, eng.ConfigHash(), desc.ConfigHash)
	case diff != nil || eng.Identity().Digest != desc.Identity.Digest:
		err = fmt.Errorf("run %s: this worker would not score as the coordinator does: %s", desc.RunID, strings.Join(diff, "; "))
	case !mapsEqual(eng.RecordedJudges(), desc.Recordings):
		err = fmt.Errorf("run %s: judges replayed from a recording here: %v; the coordinator's: %v",
			desc.RunID, eng.RecordedJudges(), desc.Recordings)
	case !slices.Equal(eng.UnconfiguredJudges(), nonNil(desc.Unconfigured)):
		err = fmt.Errorf("run %s: judges this worker cannot call (no API key in its environment): %v; the coordinator's: %v",
			desc.RunID, eng.UnconfiguredJudges(), desc.Unconfigured)
	default:
		err = eng.AdoptPrepared(desc.Prepared)
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return eng, cleanup, nil
}

// placeRecordings gives each judge the coordinator replays the
// coordinator's recording, fetched by digest; a judge it calls for real
// gets none (this worker must call it too, or refuse the run as one
// without its key).
func (w *Worker) placeRecordings(ctx context.Context, dir string, cfg *config.Config, desc *RunDescription) error {
	for _, name := range sortedNames(desc.Recordings) {
		if jc := cfg.Judges[name]; jc == nil || jc.OfflineRecording == "" {
			return fmt.Errorf("judge %s: the run replays a recording for it, the config names none", name)
		}
	}
	for _, name := range sortedNames(cfg.Judges) {
		jc := cfg.Judges[name]
		digest, replayed := desc.Recordings[name]
		if !replayed {
			jc.OfflineRecording = ""
			continue
		}
		path, err := w.fetch(ctx, dir, "judge "+name+" offline_recording", digest, maxRecording)
		if err != nil {
			return err
		}
		jc.OfflineRecording = path
	}
	return nil
}

// fetch writes the bytes stored under digest (a plugin, a judge
// recording; what names it in errors) from the object store into dir,
// after checking them against digest, and returns the file's path.
func (w *Worker) fetch(ctx context.Context, dir, what, digest string, limit int64) (string, error) {
	info, err := w.c.plugins.GetInfo(ctx, digest)
	if err != nil {
		return "", fmt.Errorf("%s@%s: not in %s: %w", what, digest, pluginsBucket, err)
	}
	if info.Size > uint64(limit) {
		return "", fmt.Errorf("%s@%s: %d bytes, over %d", what, digest, info.Size, limit)
	}
	data, err := w.c.plugins.GetBytes(ctx, digest)
	if err != nil {
		return "", fmt.Errorf("%s@%s: fetch: %w", what, digest, err)
	}
	if got := sha256Digest(data); got != digest {
		return "", fmt.Errorf("%s@%s: the object store holds bytes of digest %s; refusing them", what, digest, got)
	}
	path := filepath.Join(dir, strings.TrimPrefix(digest, "sha256:"))
	if err := os.WriteFile(path, data, 0o700); err != nil {
		return "", fmt.Errorf("%s@%s: %w", what, digest, err)
	}
	return path, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
