package sdk

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
)

// MetricKind is a metric kind whose config decodes into C.
type MetricKind[C any] struct {
	Name        string
	Description string
	// RequiredFields every case needs, whatever the config.
	RequiredFields []string
	// Capabilities the kind asks for (ABI minor 1), e.g. []abi.Capability{abi.CapJudge}.
	// See Plugin.Capabilities for how they combine with the plugin's.
	Capabilities []abi.Capability
	// Fields, if set, adds the fields a given config needs (G-Eval's
	// evaluation_params); the SDK reports missing ones as missing_field
	// before Measure is called.
	Fields func(cfg *C) []string
	// Validate, if set, checks a decoded config beyond its schema.
	Validate func(cfg *C) error
	// Prepare, if set, does once-per-run work; its State comes back in every
	// MeasureRequest.Prepared.
	Prepare func(ctx context.Context, h Host, cfg *C, req *abi.PrepareRequest) (*abi.PrepareResult, error)
	// Measure scores one case. Returning an error records a metric error;
	// return an *abi.Error to choose its code.
	Measure func(ctx context.Context, h Host, cfg *C, req *abi.MeasureRequest) (*abi.MeasureResult, error)

	// lastConfig is the last config decoded and validated, when C holds
	// only values (see flatConfig): every case of a metric sends the same
	// config, and decoding it again cost a Wasm guest ≈ 85 µs per call.
	lastConfig atomic.Pointer[decodedConfig[C]]
}

// decodedConfig is a config's raw JSON and the value it decodes to.
type decodedConfig[C any] struct {
	raw string
	cfg C
}

// Descriptor implements Kind.
func (k *MetricKind[C]) Descriptor() abi.KindDescriptor {
	return abi.KindDescriptor{
		Name:           k.Name,
		Role:           abi.RoleMetric,
		Description:    k.Description,
		RequiredFields: k.RequiredFields,
		ConfigSchema:   SchemaOf[C](),
		Prepare:        k.Prepare != nil,
		Capabilities:   k.Capabilities,
	}
}

func (k *MetricKind[C]) identity() (string, abi.Role) { return k.Name, abi.RoleMetric }

func (k *MetricKind[C]) config(raw []byte) (*C, *abi.Error) {
	if last := k.lastConfig.Load(); last != nil && last.raw == string(raw) {
		cfg := last.cfg // a copy: C holds no references, so the kind may change it
		return &cfg, nil
	}
	cfg, err := DecodeConfig[C](raw)
	if err != nil {
		return nil, err
	}
	if k.Validate != nil {
		if verr := k.Validate(cfg); verr != nil {
			return nil, asABIError(verr, abi.CodeInvalidConfig)
		}
	}
	if flatConfig(reflect.TypeFor[C]()) {
		k.lastConfig.Store(&decodedConfig[C]{raw: string(raw), cfg: *cfg})
	}
	return cfg, nil
}

// flatConfig reports whether a value of t holds no references (pointers,
// slices, maps, interfaces, funcs, channels), so that copying it copies
// all of it: only then may a decoded config be handed out again.
func flatConfig(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return flatConfig(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !flatConfig(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

func (k *MetricKind[C]) prepare(ctx context.Context, h Host, req *abi.PrepareRequest) *abi.PrepareResult {
	cfg, cerr := k.config(req.Config)
	if cerr != nil {
		return &abi.PrepareResult{Error: cerr}
	}
	if k.Prepare == nil {
		return &abi.PrepareResult{}
	}
	res, err := k.Prepare(ctx, h, cfg, req)
	if err != nil {
		return &abi.PrepareResult{Error: asABIError(err, abi.CodeMetric)}
	}
	if res == nil {
		return &abi.PrepareResult{}
	}
	return res
}

func (k *MetricKind[C]) measure(ctx context.Context, h Host, req *abi.MeasureRequest) *abi.MeasureResult {
	fail := func(e *abi.Error) *abi.MeasureResult {
		return &abi.MeasureResult{Error: e, Threshold: req.Threshold}
	}
	cfg, cerr := k.config(req.Config)
	if cerr != nil {
		return fail(cerr)
	}
	need := append([]string(nil), k.RequiredFields...)
	if k.Fields != nil {
		need = append(need, k.Fields(cfg)...)
	}
	if missing := req.Case.Missing(need); len(missing) > 0 {
		return fail(&abi.Error{Code: abi.CodeMissingField, Field: missing[0],
			Message: fmt.Sprintf("case %q has no %s", req.Case.ID, missing[0])})
	}
	res, err := k.Measure(ctx, h, cfg, req)
	if err != nil {
		return fail(asABIError(err, abi.CodeMetric))
	}
	if res == nil {
		return fail(abi.Errorf(abi.CodeMetric, "kind %s returned no result", k.Name))
	}
	if res.Error == nil && res.Score == nil {
		return fail(abi.Errorf(abi.CodeMetric, "kind %s returned neither score nor error", k.Name))
	}
	return res
}

func (k *MetricKind[C]) node(context.Context, Host, *abi.NodeRequest) *abi.NodeResult {
	return &abi.NodeResult{Error: abi.Errorf(abi.CodeABI, "%s is a metric kind", k.Name)}
}

// NodeKind is a DAG node kind whose config decodes into C.
type NodeKind[C any] struct {
	Name           string
	Description    string
	RequiredFields []string
	// Capabilities the kind asks for (ABI minor 1); see MetricKind.Capabilities.
	Capabilities []abi.Capability
	Fields       func(cfg *C) []string
	Validate     func(cfg *C) error
	// Verdicts is the fixed verdict set of a code node (e.g. false/true);
	// nil when verdicts come from the node's configuration or the kind is a
	// task kind producing Output.
	Verdicts []string
	// Run executes the node. A decision node returns a Verdict among
	// req.Verdicts; a task node returns Output.
	Run func(ctx context.Context, h Host, cfg *C, req *abi.NodeRequest) (*abi.NodeResult, error)
}

// Descriptor implements Kind.
func (k *NodeKind[C]) Descriptor() abi.KindDescriptor {
	return abi.KindDescriptor{
		Name:           k.Name,
		Role:           abi.RoleNode,
		Description:    k.Description,
		RequiredFields: k.RequiredFields,
		ConfigSchema:   SchemaOf[C](),
		Verdicts:       k.Verdicts,
		Capabilities:   k.Capabilities,
	}
}

func (k *NodeKind[C]) identity() (string, abi.Role) { return k.Name, abi.RoleNode }

func (k *NodeKind[C]) prepare(context.Context, Host, *abi.PrepareRequest) *abi.PrepareResult {
	return &abi.PrepareResult{Error: abi.Errorf(abi.CodeABI, "%s is a node kind", k.Name)}
}

func (k *NodeKind[C]) measure(_ context.Context, _ Host, req *abi.MeasureRequest) *abi.MeasureResult {
	return &abi.MeasureResult{Threshold: req.Threshold, Error: abi.Errorf(abi.CodeABI, "%s is a node kind", k.Name)}
}

func (k *NodeKind[C]) node(ctx context.Context, h Host, req *abi.NodeRequest) *abi.NodeResult {
	cfg, cerr := DecodeConfig[C](req.Config)
	if cerr != nil {
		return &abi.NodeResult{Error: cerr}
	}
	if k.Validate != nil {
		if err := k.Validate(cfg); err != nil {
			return &abi.NodeResult{Error: asABIError(err, abi.CodeInvalidConfig)}
		}
	}
	need := append([]string(nil), k.RequiredFields...)
	if k.Fields != nil {
		need = append(need, k.Fields(cfg)...)
	}
	if missing := req.Case.Missing(need); len(missing) > 0 {
		return &abi.NodeResult{Error: &abi.Error{Code: abi.CodeMissingField, Field: missing[0],
			Message: fmt.Sprintf("node %s: case %q has no %s", req.NodeID, req.Case.ID, missing[0])}}
	}
	res, err := k.Run(ctx, h, cfg, req)
	if err != nil {
		return &abi.NodeResult{Error: asABIError(err, abi.CodeMetric)}
	}
	if res == nil {
		return &abi.NodeResult{Error: abi.Errorf(abi.CodeMetric, "node kind %s returned no result", k.Name)}
	}
	if res.Error == nil && len(req.Verdicts) > 0 && !contains(req.Verdicts, res.Verdict) {
		return &abi.NodeResult{Error: abi.Errorf(abi.CodeMetric,
			"node %s: verdict %q is not one of %q", req.NodeID, res.Verdict, req.Verdicts)}
	}
	return res
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
