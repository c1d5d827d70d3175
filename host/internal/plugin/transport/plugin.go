// Package transport is what every plugin transport (wasm, process,
// inproc) shares and is held to: the Plugin interface a loaded plugin
// implements, its Info and Options, the Services a host gives an
// invocation, the guard between a guest and those services, and the
// strict reading of what a guest writes. It links no transport.
//
// Invariants, whatever the transport: every error a Plugin returns names
// plugin@version and digest (Named, OwnError); host services reach a
// guest only through Services, wrapped in one Guard per invocation (the
// capability asked for AND granted, the judge budgets checked before a
// batch is sent, the log bounded), so a denial is a typed abi.Error in the
// response, never a crash.
//
// The host fails closed on what a plugin controls: everything a guest
// writes is decoded strictly (DecodeStrict: one object, no key twice,
// numbers a double holds, fields in range) and the fields of an error the
// host owns are the host's; nothing a guest says makes the host open a
// file or a URL (schemas compile with no loader: CompileSchema); a
// descriptor is checked against the ABI before a plugin is loaded
// (CheckDescriptor).
package transport

import (
	"context"
	"errors"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/testknobs"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

// Transport names.
const (
	TransportInproc  = "inproc"
	TransportWasm    = "wasm"
	TransportProcess = "process"
)

// Plugin is a loaded plugin. Methods are safe for concurrent use.
//
// The error return of Prepare, Measure and Node is non-nil only when the
// invocation itself failed — trap, timeout, ABI violation, output too large —
// and is then an *abi.Error naming the plugin. A guest's own verdict that it
// could not score (metric error, missing field, invalid config) comes back
// in the result's Error with a nil error.
type Plugin interface {
	Info() Info
	Prepare(ctx context.Context, svc Services, req *abi.PrepareRequest) (*abi.PrepareResult, error)
	Measure(ctx context.Context, svc Services, req *abi.MeasureRequest) (*abi.MeasureResult, error)
	Node(ctx context.Context, svc Services, req *abi.NodeRequest) (*abi.NodeResult, error)
	Close(ctx context.Context) error
}

// FuelRecorder is implemented by Services that record the fuel a Wasm
// guest spent in each invocation (wasm/meter.go), whatever its outcome.
type FuelRecorder interface {
	RecordFuel(fuel uint64)
}

// Info identifies a loaded plugin.
type Info struct {
	Descriptor abi.Descriptor
	// Digest is "sha256:<hex>" of the module bytes (wasm, process) or
	// "inproc:<name>@<version>" for linked kinds.
	Digest    string
	Transport string
	// Path the plugin was loaded from, if any.
	Path string
	// Isolation is the OS isolation a process plugin obtained at load;
	// nil for the other transports.
	Isolation *IsolationReport
}

// ID is "name@version", the form errors use.
func (i Info) ID() string { return i.Descriptor.Name + "@" + i.Descriptor.Version }

// Services are the host services an invocation may use. The host (engine,
// DAG scheduler) implements them per metric; the plugin layer wraps them in
// grants and limits before a guest can reach them.
type Services interface {
	// Judge runs a batch of judge requests concurrently and answers in order;
	// per-request faults are in each response's Error.
	Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse
	// Log records a guest's log line.
	Log(ctx context.Context, pluginID string, rec abi.LogRecord)
}

// EmbedServices is implemented by Services that embed texts (anvil_embed,
// ABI minor 5). It is a separate interface so Services written before it
// keep compiling; a guard over Services without it answers an embed
// request with capability_denied.
type EmbedServices interface {
	// Embed answers one request: a vector per text, or the request's error.
	Embed(ctx context.Context, req abi.EmbedRequest) abi.EmbedResult
}

// Grants, Limits and DefaultLimits live in host/internal/pluginconfig,
// which links nothing heavy, so that parsing a config does not link wazero,
// Extism or go-plugin. The aliases are the same types, not copies.

// Grants are the capabilities an operator gives a plugin.
type Grants = pluginconfig.Grants

// Limits bound one invocation (one Prepare, Measure or Node call); zero
// fields take pluginconfig.DefaultLimits.
type Limits = pluginconfig.Limits

// Options configure loading.
type Options struct {
	Grants Grants
	Limits Limits
	// Isolation is the OS isolation policy of a process plugin
	// (isolation.go); other transports ignore it.
	Isolation IsolationMode

	// Test holds the plugin packages' test-only knobs; nil in production.
	// Its type is internal to host/internal/plugin, so no other package
	// can make one.
	Test *testknobs.Knobs
}

// Named fills in plugin and digest on an error that concerns this plugin.
func Named(info Info, e *abi.Error) *abi.Error {
	if e == nil {
		return nil
	}
	if e.Plugin == "" {
		e.Plugin = info.ID()
	}
	if e.Digest == "" {
		e.Digest = info.Digest
	}
	return e
}

// OwnError makes an error a guest returned in its result the host's: the
// fields the host owns are the host's, whatever the guest wrote there —
// plugin and digest name this plugin (a guest cannot put another plugin's
// name on its failures), stderr is only ever what the host captured, and
// retryable is a judge fault's property, which a guest cannot declare.
func OwnError(info Info, e *abi.Error) *abi.Error {
	if e != nil {
		e.Plugin, e.Digest = info.ID(), info.Digest
		e.Stderr, e.Retryable = "", false
	}
	return e
}

// MinWarmup is the least time an instance gets to warm up. Warming is not
// an invocation, and a Go runtime's first start on a loaded machine can
// take longer than a tight per-case deadline; a guest that never finishes
// starting is still stopped.
const MinWarmup = 10 * time.Second

// ClipMessage bounds a message that may carry a whole Wasm stack trace.
func ClipMessage(s string) string {
	const max = 2 << 10
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// ErrClosed is a call's error on a plugin that was closed.
var ErrClosed = errors.New("plugin is closed")
