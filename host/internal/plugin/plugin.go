// Package plugin loads metric and node kinds and hands them to the rest of
// the host behind one interface, whatever the transport: inproc (a kind
// linked into the binary through sdk: package inproc), wasm (an Extism
// module on wazero, sandboxed: package wasm) and process (a native
// go-plugin binary, OS-isolated on Linux: package process). What every
// transport shares — the interface, the guard between a guest and the
// host's services, strict decoding — is package transport, whose types
// this package names for the rest of the host.
//
// Invariants: the engine and the DAG scheduler see only Plugin; every
// error a Plugin returns names plugin@version and digest; host services
// reach a guest only through Services, wrapped in one guard per
// invocation whatever the transport (package transport); nothing is
// loaded without a pinned sha256 except through Inspect.
package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentanvil/anvil/host/internal/plugin/inproc"
	"github.com/agentanvil/anvil/host/internal/plugin/process"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/host/internal/plugin/wasm"
	"github.com/agentanvil/anvil/sdk"
)

// The shared types, named here for the rest of the host; they are the
// transport package's, not copies.
type (
	// Plugin is a loaded plugin, whatever its transport.
	Plugin = transport.Plugin
	// Info identifies a loaded plugin.
	Info = transport.Info
	// Services are the host services an invocation may use.
	Services = transport.Services
	// EmbedServices is implemented by Services that embed texts.
	EmbedServices = transport.EmbedServices
	// FuelRecorder is implemented by Services that record a Wasm guest's fuel.
	FuelRecorder = transport.FuelRecorder
	// JudgeCoster is implemented by Services that bound a judge request's cost.
	JudgeCoster = transport.JudgeCoster
	// Options configure loading.
	Options = transport.Options
	// Grants are the capabilities an operator gives a plugin.
	Grants = transport.Grants
	// Limits bound one invocation.
	Limits = transport.Limits
	// IsolationMode is the operator's isolation policy for a process plugin.
	IsolationMode = transport.IsolationMode
	// IsolationReport is what a process plugin asked the OS for and got.
	IsolationReport = transport.IsolationReport
	// Confinement is a set of OS isolation measures.
	Confinement = transport.Confinement
	// RuntimeOptions configure a Runtime.
	RuntimeOptions = wasm.RuntimeOptions
	// Deferred is a Wasm plugin whose descriptor is known and whose
	// compiled code may still be on its way (Runtime.LoadDeferred).
	Deferred = wasm.Deferred
)

// Transport names.
const (
	TransportInproc  = transport.TransportInproc
	TransportWasm    = transport.TransportWasm
	TransportProcess = transport.TransportProcess
)

// Isolation policies and measures.
const (
	IsolationBestEffort = transport.IsolationBestEffort
	IsolationRequired   = transport.IsolationRequired

	ConfineUserNS       = transport.ConfineUserNS
	ConfinePIDNS        = transport.ConfinePIDNS
	ConfineNetNS        = transport.ConfineNetNS
	ConfineMountNS      = transport.ConfineMountNS
	ConfineIPCNS        = transport.ConfineIPCNS
	ConfineUTSNS        = transport.ConfineUTSNS
	ConfineProc         = transport.ConfineProc
	ConfineReadOnly     = transport.ConfineReadOnly
	ConfineNoNewPrivs   = transport.ConfineNoNewPrivs
	ConfineNoCaps       = transport.ConfineNoCaps
	ConfineUnprivileged = transport.ConfineUnprivileged
	ConfineAll          = transport.ConfineAll
)

var (
	// ErrDigestMismatch is wrapped by the error a load returns when the
	// module's or binary's sha256 is not the pinned one.
	ErrDigestMismatch = transport.ErrDigestMismatch
	// ErrIsolationMissing is wrapped by the load error of a process plugin
	// with `isolation: required` that the kernel could not fully isolate.
	ErrIsolationMissing = transport.ErrIsolationMissing
)

// FileDigest is the "sha256:<hex>" of the regular file at path, streamed.
func FileDigest(path string) (string, error) { return transport.FileDigest(path) }

// CompileSchema compiles a JSON Schema a plugin published, with no loader.
var CompileSchema = transport.CompileSchema

// Inproc wraps a plugin linked into the host binary.
func Inproc(p *sdk.Plugin, opts Options) Plugin { return inproc.New(p, opts) }

// HardenHost makes the host process non-dumpable where the OS allows it
// (process.HardenHost).
func HardenHost() error { return process.HardenHost() }

// MaybeRunTrampoline turns this process into a process plugin's sandbox
// trampoline when it was started as one, and returns otherwise; call it
// first in main (process.MaybeRunTrampoline).
func MaybeRunTrampoline() { process.MaybeRunTrampoline() }

// Runtime loads plugins of every transport that needs one: Wasm modules
// through one shared compilation cache, native binaries as processes.
// Create one per process and share it; it is safe for concurrent use.
type Runtime struct {
	wasm   *wasm.Runtime
	logger *slog.Logger

	mu     sync.Mutex
	closed bool
}

// NewRuntime creates a Runtime. Close it when done.
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	w, err := wasm.NewRuntime(ctx, opts)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{wasm: w, logger: logger}, nil
}

// Load verifies, compiles and starts the Wasm plugin at path against its
// pinned digest (wasm.Runtime.Load).
func (r *Runtime) Load(ctx context.Context, path, digest string, opts Options) (Plugin, error) {
	return r.wasm.Load(ctx, path, digest, opts)
}

// LoadDeferred verifies the Wasm plugin at path, reads its descriptor and
// compiles it in the background (wasm.Runtime.LoadDeferred).
func (r *Runtime) LoadDeferred(ctx context.Context, path, digest string, opts Options, onFail func(error)) (*Deferred, error) {
	return r.wasm.LoadDeferred(ctx, path, digest, opts, onFail)
}

// Inspect loads the Wasm plugin at path without a pinned digest only to
// read its Info (wasm.Runtime.Inspect); it exists for `anvil-host plugin
// inspect`.
func (r *Runtime) Inspect(ctx context.Context, path string) (Info, error) {
	return r.wasm.Inspect(ctx, path)
}

// LoadProcess verifies and starts the native plugin binary at path
// against its pinned digest, OS-isolated, and reads its descriptor
// (process.Load).
func (r *Runtime) LoadProcess(ctx context.Context, path, digest string, opts Options) (Plugin, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("plugin %s: plugin runtime is closed", path)
	}
	return process.Load(ctx, path, digest, opts, r.logger)
}

// Close waits for abandoned compiles to stop and releases the compilation
// cache. Plugins loaded through the Runtime must be closed first.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	return r.wasm.Close(ctx)
}
