package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/pluginsource"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// KindDAG is the host's own metric kind: a decision graph (host/dag).
const KindDAG = "dag"

// loadPlugins registers the first-party kinds (inproc) and loads every
// configured plugin, verifying its digest before compiling it.
func (e *Engine) loadPlugins(ctx context.Context) error {
	var errs []error
	// A kind is provided once. A configured plugin may provide a kind
	// the host links (a first-party kind pulled from a registry at a
	// pinned version): the configured one, the config's explicit choice,
	// replaces the linked one.
	register := func(p plugin.Plugin, source string, builtin bool) {
		for _, k := range p.Info().Descriptor.Kinds {
			if prev, dup := e.kinds[kindKey(k.Role, k.Name)]; dup {
				if !prev.builtin || builtin {
					errs = append(errs, fmt.Errorf("%s kind %q is provided by both %s and %s", k.Role, k.Name, prev.source, source))
					continue
				}
				e.logger.Info("a configured plugin replaces a built-in kind", "kind", string(k.Role)+"/"+k.Name, "plugin", source, "replaces", prev.source)
			}
			if k.Name == KindDAG {
				errs = append(errs, fmt.Errorf("%s: kind name %q is reserved for the host's DAG metric", source, k.Name))
				continue
			}
			e.kinds[kindKey(k.Role, k.Name)] = kindRef{plugin: p, desc: k, source: source, builtin: builtin}
		}
	}
	for _, sp := range append(FirstParty(), e.opts.extraPlugins...) {
		p := plugin.Inproc(sp, plugin.Options{Grants: plugin.Grants{Judge: true}})
		e.plugins[sp.Name] = p
		register(p, "builtin plugin "+sp.Name, true)
	}
	if len(e.cfg.Plugins) == 0 {
		return errors.Join(errs...)
	}
	rt, err := plugin.NewRuntime(ctx, plugin.RuntimeOptions{CacheDir: e.opts.CompileCacheDir, Logger: e.logger, BeforeCompile: e.opts.beforeCompile})
	if err != nil {
		return err
	}
	e.runtime = rt
	names := make([]string, 0, len(e.cfg.Plugins))
	for n := range e.cfg.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	dist, err := e.openDistribution()
	if err != nil {
		return err
	}
	for _, name := range names {
		pc := e.cfg.Plugins[name]
		where := fmt.Sprintf("%s:%d: plugins.%s", e.cfg.File, pc.Line, name)
		// Where the module is, and what the trust policy decides on, come
		// first: nothing of a plugin is compiled or started before the
		// policy has accepted it.
		res, err := dist.resolve(ctx, name, pc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		dec, err := dist.policy.Check(trust.Subject{Plugin: name, Digest: res.Subject, Signatures: res.Signatures, Attestations: res.Attestations,
			Granted: pluginsource.Granted(pc), RequireSignature: pc.RequireSignature})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		var p plugin.Plugin
		transport := cmp.Or(res.Transport, pc.Transport)
		switch opts := (plugin.Options{Grants: pc.Grants, Limits: pc.Limits, Isolation: pc.Isolation}); transport {
		case "", plugin.TransportWasm:
			if !e.opts.CompileInBackground {
				p, err = rt.Load(ctx, res.Path, res.ModuleDigest, opts)
				break
			}
			var d *plugin.Deferred
			refused := func(err error) error { return fmt.Errorf("%s: %s: %w", where, res.ID, err) }
			d, err = rt.LoadDeferred(ctx, res.Path, res.ModuleDigest, opts, func(err error) { e.compiling.failed(refused(err)) })
			if err == nil {
				p = d
				e.compiling.add(d, refused)
			}
		case plugin.TransportProcess:
			p, err = rt.LoadProcess(ctx, res.Path, res.ModuleDigest, opts)
		default:
			err = fmt.Errorf("transport %q: want %q (the default) or %q", pc.Transport, plugin.TransportWasm, plugin.TransportProcess)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", where, res.ID, err))
			continue
		}
		if res.Summary != nil {
			// The policy was decided on the manifest's claims; a module
			// whose own descriptor differs is refused before it measures.
			if err := res.Summary.Check(p.Info().Descriptor); err != nil {
				_ = p.Close(ctx)
				errs = append(errs, fmt.Errorf("%s: %s: refused: %w; nothing of it was run", where, res.ID, err))
				continue
			}
		}
		e.sources[name] = pluginSource{id: res.ID, signer: dec.Signer(), conformance: dec.Conformance}
		d := p.Info().Descriptor
		if d.Asks(abi.CapJudge) && !pc.Grants.Judge {
			e.warns = append(e.warns, fmt.Sprintf("%s: plugin %s asks for the judge capability, which is not granted: its judge calls will be denied", where, p.Info().ID()))
		}
		e.plugins[name] = p
		e.digests[name] = p.Info().Digest
		register(p, fmt.Sprintf("plugin %s (%s)", name, p.Info().ID()), false)
	}
	return errors.Join(errs...)
}

// pluginDigest reads the pinned digest from sha256 or sha256_file.
func pluginDigest(cfg *config.Config, pc *config.Plugin) (string, error) {
	if pc.SHA256 != "" {
		return pc.SHA256, nil
	}
	f, err := os.Open(cfg.Resolve(pc.SHA256File))
	if err != nil {
		return "", fmt.Errorf("sha256_file: %w (build the plugin first: scripts/build-plugins)", err)
	}
	defer f.Close()
	// A digest file is one line; a path to something endless (/dev/zero)
	// must not be read whole.
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("sha256_file %s: %w", pc.SHA256File, err)
	}
	fields := strings.Fields(string(b)) // "<hex>  <name>" as sha256sum writes it, or bare hex
	if len(fields) == 0 {
		return "", fmt.Errorf("sha256_file %s is empty", pc.SHA256File)
	}
	return fields[0], nil
}

// resolveMetrics binds every configured metric to what runs it, checks its
// params against the kind's schema, and validates DAGs.
func (e *Engine) resolveMetrics() error {
	var errs []error
	all := map[string]*metric{}
	names := map[string]int{}
	for _, mc := range e.cfg.Metrics {
		names[mc.Name]++
	}
	var list []*metric
	for _, mc := range e.cfg.Metrics {
		m, err := e.resolveMetric(mc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all[m.key] = m
		list = append(list, m)
	}
	// DAGs last: they refer to other metrics by name.
	childOf := map[string]string{}
	for _, m := range list {
		if m.kind != KindDAG {
			continue
		}
		if err := e.resolveDAG(m, all, names, childOf); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	e.all = all
	for _, m := range list {
		if parent, isChild := childOf[m.key]; isChild && !m.cfg.Standalone {
			m.childOnly = parent
			continue
		}
		e.metrics = append(e.metrics, m)
	}
	if len(e.metrics) == 0 {
		return fmt.Errorf("%s: every metric is a DAG child; nothing to run at top level", e.cfg.File)
	}
	for _, m := range list {
		if m.needsJudge {
			for _, name := range m.judgesUsed() {
				if why, off := e.judges.unavailable[name]; off && m.skip == "" {
					m.skip = why
				}
			}
		}
	}
	return nil
}

// checkRepeats refuses a panel or samples on a metric whose kind calls no
// judge: its score cannot vary, and the extra scorings would only cost time.
func checkRepeats(where string, m *metric) error {
	if m.needsJudge {
		return nil
	}
	if len(m.panel) > 1 {
		return fmt.Errorf("%s: judges: [%s]: kind %s calls no judge, so a panel cannot change its score (drop judges)", where, strings.Join(m.panel, ", "), m.kind)
	}
	if m.samples > 1 {
		return fmt.Errorf("%s: samples: %d: kind %s calls no judge, so its score does not vary between samples (drop samples)", where, m.samples, m.kind)
	}
	if len(m.cascade) > 0 {
		return fmt.Errorf("%s: judge_cascade: [%s]: kind %s calls no judge, so no judge can decide it (drop judge_cascade)", where, strings.Join(m.cascade, ", "), m.kind)
	}
	return nil
}

func (e *Engine) resolveMetric(mc *config.Metric) (*metric, error) {
	where := fmt.Sprintf("%s:%d: metric %s", e.cfg.File, mc.Line, mc.Name)
	m := &metric{cfg: mc, key: mc.Key, kind: mc.Kind, threshold: e.cfg.Threshold(mc), gated: mc.Gated(),
		judgeName: e.cfg.JudgeName(mc), panel: e.cfg.JudgeNames(mc), aggregate: mc.Aggregation(), samples: mc.SampleCount(),
		cascade: mc.JudgeCascade}
	if mc.Samples.Adaptive() {
		m.adaptive = mc.Samples
	}
	if b := mc.Band(); len(b) == 2 {
		m.band = [2]float64{b[0], b[1]}
	}
	if j := e.judges.byName[m.judgeName]; j != nil {
		m.judgeModel = j.Model()
	}
	params, err := mc.ParamsJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: params: %w", where, err)
	}
	m.params = params
	// Strict mode is the host's to apply: whatever kind the metric is, a
	// case passes only with a perfect score.
	var common struct {
		StrictMode bool `json:"strict_mode"`
	}
	if json.Unmarshal(params, &common) == nil && common.StrictMode {
		m.threshold = 1
	}
	if mc.Kind == KindDAG {
		return m, nil
	}
	ref, ok := e.kinds[kindKey(abi.RoleMetric, mc.Kind)]
	if !ok {
		if node, isNode := e.kinds[kindKey(abi.RoleNode, mc.Kind)]; isNode {
			return nil, fmt.Errorf("%s: kind %q is a DAG node kind (from %s), not a metric kind", where, mc.Kind, node.source)
		}
		return nil, fmt.Errorf("%s: unknown kind %q (known: %s)", where, mc.Kind, strings.Join(e.kindNames(abi.RoleMetric), ", "))
	}
	m.plugin, m.desc = ref.plugin, ref.desc
	m.needsJudge = ref.asks(abi.CapJudge)
	if m.needsJudge && e.judges.byName[m.judgeName] == nil {
		return nil, fmt.Errorf("%s: kind %s needs a judge and none is configured (set defaults.judge or the metric's judge)", where, mc.Kind)
	}
	if err := checkParams(e.cfg.File, &mc.Params, params, ref.desc.ConfigSchema, "metric "+mc.Name); err != nil {
		return nil, err
	}
	if err := checkFields(e.cfg.File, mc.Line, mc.Name, mc.Kind, &mc.Params, params, ref.desc.RequiredFields); err != nil {
		return nil, err
	}
	if err := checkRepeats(where, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (e *Engine) resolveDAG(m *metric, all map[string]*metric, names map[string]int, childOf map[string]string) error {
	where := fmt.Sprintf("%s:%d: metric %s", e.cfg.File, m.cfg.Line, m.cfg.Name)
	spec, err := dag.Parse(&m.cfg.Params, e.cfg.File)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	env := dag.Env{NodeKinds: map[string]abi.KindDescriptor{}, Metrics: map[string]bool{}, Self: m.cfg.Name}
	for _, ref := range e.kinds {
		if ref.desc.Role == abi.RoleNode {
			env.NodeKinds[ref.desc.Name] = ref.desc
		}
	}
	for key, other := range all {
		if other != m && other.kind != KindDAG && names[other.cfg.Name] == 1 {
			env.Metrics[key] = true
		}
	}
	g, warns, err := dag.Validate(spec, env)
	for _, w := range warns {
		e.warns = append(e.warns, fmt.Sprintf("%s: %s", where, w))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	m.graph = g
	m.dagFields = g.RequiredFields()
	for _, n := range g.Nodes {
		if ref, ok := e.kinds[kindKey(abi.RoleNode, n.Kind)]; ok && ref.asks(abi.CapJudge) {
			m.needsJudge = true
		}
	}
	for _, child := range g.ChildMetrics() {
		childOf[child] = m.key
		if c := all[child]; c != nil && c.needsJudge {
			m.needsJudge = true
		}
	}
	if m.needsJudge && e.judges.byName[m.judgeName] == nil {
		return fmt.Errorf("%s: its nodes need a judge and none is configured (set defaults.judge or the metric's judge)", where)
	}
	return checkRepeats(where, m)
}

func (e *Engine) kindNames(role abi.Role) []string {
	var out []string
	for _, k := range e.kinds {
		if k.desc.Role == role {
			out = append(out, k.desc.Name)
		}
	}
	sort.Strings(out)
	return append(out, KindDAG)
}

// judgeNodes counts the nodes of a dag metric whose kind can call a judge.
func (e *Engine) judgeNodes(m *metric) int {
	n := 0
	for _, node := range m.graph.Nodes {
		if ref, ok := e.kinds[kindKey(abi.RoleNode, node.Kind)]; ok && ref.asks(abi.CapJudge) {
			n++
		}
	}
	return n
}

// asks reports whether the kind asks for capability c: per kind from ABI
// minor 1, so a judge-free kind of a plugin whose other kind judges runs
// without a judge.
func (r kindRef) asks(c abi.Capability) bool {
	return r.plugin.Info().Descriptor.KindAsks(r.desc, c)
}

// kindKey keys the kind registry: a metric kind and a node kind may share a
// name (json_valid is both in the textcheck example).
func kindKey(role abi.Role, name string) string { return string(role) + ":" + name }
