// Package sdk is how a metric kind or DAG node kind is written once in Go and
// then linked into the host (transport inproc), built to a Wasm module
// (GOOS=wasip1, see package sdk/guest) or served as a native plugin.
//
// A plugin is a Plugin value listing its kinds. A kind is a MetricKind[C] or
// NodeKind[C], where C is the kind's config struct: the config JSON Schema
// in the descriptor is reflected from C, and configs are decoded strictly
// into C (an unknown field is an invalid_config error naming it).
//
// Invariants: a kind talks to the outside world only through Host, so the
// same code behaves identically in every transport; a kind returns metric
// errors as *abi.Error values (the case is recorded as failed to score) and
// never panics on bad input.
package sdk

import (
	"context"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
)

// Host is what a running kind may ask of the host. Which services work
// depends on the capabilities the operator granted: an ungranted service
// answers with an abi.Error of code capability_denied.
type Host interface {
	// Judge sends a batch of judge requests; the host runs them concurrently
	// and answers in order. The error is non-nil only when the batch as a
	// whole was refused (capability denied, budget spent, malformed batch);
	// per-request faults are in each response's Error.
	Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error)
	// Log records a message in the host's log, attributed to the plugin.
	Log(ctx context.Context, level slog.Level, msg string, attrs ...any)
}

// Embedder is implemented by a Host that embeds texts (ABI minor 5, the
// host function anvil_embed). It is separate from Host so Host
// implementations written before it keep compiling; call it through
// Embed, which says plainly when a host cannot embed.
type Embedder interface {
	// Embed returns one vector per text of req, in order, through the
	// judge layer (cached per text, counted as one judge call against the
	// invocation's budget). The error is the request's, an *abi.Error
	// (capability_denied, budget_exhausted, invalid_config without an
	// embedding model, judge_error, ...); there are then no vectors.
	Embed(ctx context.Context, req abi.EmbedRequest) ([][]float64, error)
}

// Embed embeds req's texts through h, or says that h cannot embed
// (capability_denied: a host older than ABI minor 5, or a test Host
// without an Embed method).
func Embed(ctx context.Context, h Host, req abi.EmbedRequest) ([][]float64, error) {
	e, ok := h.(Embedder)
	if !ok {
		return nil, abi.Errorf(abi.CodeCapability, "this host does not embed texts (%s needs ABI minor 5)", abi.HostEmbed)
	}
	return e.Embed(ctx, req)
}

// Kind is implemented by MetricKind and NodeKind.
type Kind interface {
	Descriptor() abi.KindDescriptor
	// identity is the kind's name and role: what Descriptor says, without
	// building its config schema (by reflection), which a lookup on every
	// call cannot afford.
	identity() (string, abi.Role)
	prepare(ctx context.Context, h Host, req *abi.PrepareRequest) *abi.PrepareResult
	measure(ctx context.Context, h Host, req *abi.MeasureRequest) *abi.MeasureResult
	node(ctx context.Context, h Host, req *abi.NodeRequest) *abi.NodeResult
}

// Plugin is a set of kinds published together.
type Plugin struct {
	Name    string
	Version string
	// Capabilities the plugin asks for. Two ways to use it:
	//
	//   - Set it (the ABI 1.0 way): every kind that has no Capabilities of
	//     its own asks for these; a kind's own list replaces them for it
	//     and must be a subset of them.
	//   - Leave it nil and set Capabilities on the kinds that need them
	//     (ABI 1.1): the plugin's list is then the union of the kinds', and
	//     a kind without a list asks for nothing — so a judge-free kind of
	//     a plugin whose other kind judges runs with no judge configured.
	Capabilities []abi.Capability
	Kinds        []Kind
}

// Describe returns the plugin's descriptor.
func (p *Plugin) Describe() abi.Descriptor {
	d := abi.Descriptor{
		Name:         p.Name,
		Version:      p.Version,
		ABIMajor:     abi.Major,
		ABIMinor:     abi.Minor,
		Capabilities: p.Capabilities,
	}
	for _, k := range p.Kinds {
		d.Kinds = append(d.Kinds, k.Descriptor())
	}
	if p.Capabilities != nil {
		return d
	}
	// Per-kind mode: the plugin asks for the union, each kind for its own
	// list (an empty list, not an absent one, for a kind asking nothing).
	perKind := false
	for i, k := range d.Kinds {
		if k.Capabilities != nil {
			perKind = true
		}
		for _, c := range k.Capabilities {
			if !d.Asks(c) {
				d.Capabilities = append(d.Capabilities, c)
			}
		}
		if k.Capabilities == nil {
			d.Kinds[i].Capabilities = []abi.Capability{}
		}
	}
	if !perKind {
		// No kind asks for anything: keep the ABI 1.0 shape.
		for i := range d.Kinds {
			d.Kinds[i].Capabilities = nil
		}
	}
	return d
}

// kind finds the kind by name and role: metric kinds and node kinds are
// separate namespaces (a plugin may offer json_valid as both).
func (p *Plugin) kind(name string, role abi.Role) (Kind, *abi.Error) {
	var other abi.Role
	for _, k := range p.Kinds {
		kname, krole := k.identity()
		if kname != name {
			continue
		}
		if krole == role {
			return k, nil
		}
		other = krole
	}
	if other != "" {
		return nil, abi.Errorf(abi.CodeABI, "kind %q is a %s kind, not a %s kind", name, other, role)
	}
	return nil, abi.Errorf(abi.CodeABI, "plugin %s has no kind %q", p.Name, name)
}

// Prepare runs the named metric kind's once-per-run preparation. Kinds
// without a Prepare function return an empty result.
func (p *Plugin) Prepare(ctx context.Context, h Host, req *abi.PrepareRequest) *abi.PrepareResult {
	k, err := p.kind(req.Kind, abi.RoleMetric)
	if err != nil {
		return &abi.PrepareResult{Error: err}
	}
	return k.prepare(ctx, h, req)
}

// Measure scores one case with the named metric kind.
func (p *Plugin) Measure(ctx context.Context, h Host, req *abi.MeasureRequest) *abi.MeasureResult {
	k, err := p.kind(req.Kind, abi.RoleMetric)
	if err != nil {
		return &abi.MeasureResult{Error: err, Threshold: req.Threshold}
	}
	return k.measure(ctx, h, req)
}

// Node runs the named node kind on one case.
func (p *Plugin) Node(ctx context.Context, h Host, req *abi.NodeRequest) *abi.NodeResult {
	k, err := p.kind(req.Kind, abi.RoleNode)
	if err != nil {
		return &abi.NodeResult{Error: err}
	}
	return k.node(ctx, h, req)
}
