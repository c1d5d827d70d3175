package sdk

import (
	"context"
	"fmt"
	"reflect"
	"slices"
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

	// lastConfig is the last config decoded and validated, when C can be
	// copied whole (see copyableConfig): every case of a metric sends the
	// same config, and decoding it again cost a Wasm guest ≈ 85 µs per
	// call (and G-Eval's, which holds slices and pointers, ≈ 20 µs of host
	// CPU per in-process call).
	lastConfig atomic.Pointer[decodedConfig[C]]
}

// decodedConfig is a config's raw JSON and the value it decodes to.
type decodedConfig[C any] struct {
	raw  string
	cfg  C
	flat bool // C holds no references: copying cfg copies all of it
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
		cfg := last.cfg // a copy of the values; references are copied below
		if !last.flat {
			deepCopy(reflect.ValueOf(&cfg).Elem(), reflect.ValueOf(&last.cfg).Elem())
		}
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
	if t := reflect.TypeFor[C](); copyableConfig(t) {
		// Kept as decoded, never handed out: each call gets a copy.
		kept := &decodedConfig[C]{raw: string(raw), cfg: *cfg, flat: flatConfig(t)}
		if !kept.flat {
			deepCopy(reflect.ValueOf(&kept.cfg).Elem(), reflect.ValueOf(cfg).Elem())
		}
		k.lastConfig.Store(kept)
	}
	return cfg, nil
}

// copyableConfig reports whether deepCopy copies a value of t entirely —
// the same value as decoding its JSON again, in memory of its own: values,
// and pointers, slices and maps (string-keyed) of such, in structs whose
// fields are all exported (what encoding/json fills). Interfaces, funcs,
// channels and unexported fields (which a custom UnmarshalJSON may set)
// are not copied: a config holding one is decoded per call as before.
func copyableConfig(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array, reflect.Pointer, reflect.Slice:
		return copyableConfig(t.Elem())
	case reflect.Map:
		return t.Key().Kind() == reflect.String && copyableConfig(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); !f.IsExported() || !copyableConfig(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// deepCopy sets dst, which holds a shallow copy of src, to a copy of src
// that shares no pointer, slice or map with it (for copyableConfig types;
// nil stays nil, empty stays empty, as decoding gives them).
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		p.Elem().Set(src.Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		reflect.Copy(s, src)
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			v.Set(it.Value())
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	}
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
	if missing := req.Case.Missing(fieldsNeeded(k.RequiredFields, k.Fields, cfg)); len(missing) > 0 {
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
	if missing := req.Case.Missing(fieldsNeeded(k.RequiredFields, k.Fields, cfg)); len(missing) > 0 {
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

// fieldsNeeded is what one call of a kind needs of its case: required,
// and what fields adds for cfg. Without fields it is required itself,
// which the caller only reads, so the common call allocates nothing; with
// them, a new list (Clip: the append never writes into required's array).
func fieldsNeeded[C any](required []string, fields func(C) []string, cfg C) []string {
	if fields == nil {
		return required
	}
	return append(slices.Clip(required), fields(cfg)...)
}
