package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/sdk/native"
)

// processPlugin is a native plugin binary run as a child process and
// spoken to over github.com/hashicorp/go-plugin (gRPC, JSON in bytes
// fields; see package sdk/native for the wire).
//
// One process serves every call of the plugin, concurrently: gRPC is
// concurrent, and the guest's sdk.Plugin must be safe for concurrent use
// (Limits.PoolSize does not apply). The process is started at load and
// replaced lazily: after a crash or a timeout the next call starts a fresh
// one, verifying the binary's sha256 again before it runs.
//
// Error kinds, as the engine sees them — the same as the Wasm transport's:
// a metric error is in the result; a trap (the process died: a panic, a
// kill, os.Exit), a timeout (the process is killed, since what it was
// doing is unknown), an ABI violation and output_too_large are the error
// return, an *abi.Error naming plugin@version and digest with the
// process's captured stderr. A call that was in flight on a process
// another call's timeout killed is a trap saying so, marked retryable.
//
// Limits.MemoryPages is not enforced: there is no portable way to cap a
// native process's memory from here. Run the host (or the plugin) under
// a cgroup / container memory limit; see docs/process-plugins.md.
type processPlugin struct {
	info   transport.Info
	opts   transport.Options
	logger *slog.Logger
	path   string // absolute path of the binary
	sum    []byte // the pinned sha256

	mu       sync.Mutex
	cur      *proc     // the running process, nil when none
	starting *startJob // non-nil while a process is being started
	closed   bool
	calls    sync.WaitGroup // calls in flight, for Close

	// starts counts processes ever started: a replaced process shows.
	starts atomic.Int64
}

var _ transport.Plugin = (*processPlugin)(nil)

// startJob is one process start that concurrent callers wait for.
type startJob struct {
	done chan struct{}
	pr   *proc
	err  error
}

// processExports are the "exports" a process guest has: the gRPC service
// always carries every method, so the descriptor checks shared with Wasm
// find none missing.
var processExports = map[string]bool{
	abi.ExportMarker: true, abi.ExportDescribe: true, abi.ExportPrepare: true,
	abi.ExportMeasure: true, abi.ExportNode: true,
}

// Load verifies and starts the native plugin binary at path (the
// "process" transport) and reads its descriptor. digest is the binary's
// pinned sha256 ("sha256:<hex>" or bare hex); the file is hashed before it
// is started — a mismatch is refused naming path, wanted and actual
// digest, and nothing runs — and again immediately before every start,
// restarts included, on the open file that is then executed. An empty
// digest is refused: native code is not the Wasm sandbox, so pinning it
// matters more here than anywhere.
//
// The process gets an empty environment except go-plugin's handshake
// variables, no stdin, its binary's directory as working directory and,
// on Linux, the OS isolation of sandbox_linux.go (opts.Isolation decides
// whether a missing measure is a warning or a load error; Info().Isolation
// records what was obtained). logger receives host-side events and the
// guest's logs outside an invocation (nil discards them). Load refuses a binary that is not a
// go-plugin gRPC plugin, speaks another ABI major (naming both), or
// describes itself inconsistently.
func Load(ctx context.Context, path, digest string, opts transport.Options, logger *slog.Logger) (transport.Plugin, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if digest == "" {
		return nil, fmt.Errorf("plugin %s: no sha256 digest pinned; refusing to start unverified native code "+
			"(`sha256sum %s` prints the digest)", path, path)
	}
	want, err := transport.ParseDigest(digest)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	opts.Limits = opts.Limits.WithDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	got, err := transport.FileDigest(abs)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	if got != want {
		return nil, fmt.Errorf("plugin %s: %w: want %s, got %s; refusing to start it", path, transport.ErrDigestMismatch, want, got)
	}
	sum, _ := hex.DecodeString(want[len(transport.DigestPrefix):])
	p := &processPlugin{
		// Until the descriptor is read, the plugin is known by path and digest.
		info:   transport.Info{Descriptor: abi.Descriptor{Name: path}, Digest: got, Transport: transport.TransportProcess, Path: path},
		opts:   opts,
		logger: logger,
		path:   abs,
		sum:    sum,
	}
	pr, raw, err := p.startDescribed(ctx)
	if err != nil {
		return nil, err
	}
	var d abi.Descriptor
	if err := transport.DecodeStrict(raw, &d); err != nil {
		pr.stop("descriptor refused")
		return nil, transport.LoadError(p.info, abi.CodeABI, "describe result: %v", err)
	}
	if d.ABIMajor != abi.Major {
		pr.stop("descriptor refused")
		return nil, transport.LoadError(p.info, abi.CodeABI,
			"descriptor says abi_major %d but the process handshook as ABI v%d; this host speaks ABI v%d", d.ABIMajor, abi.Major, abi.Major)
	}
	if err := transport.CheckDescriptor(&d, processExports); err != nil {
		pr.stop("descriptor refused")
		return nil, transport.LoadError(p.info, abi.CodeABI, "descriptor: %v", err)
	}
	p.info.Descriptor = d
	for _, c := range d.Capabilities {
		if !opts.Grants.Has(c) {
			logger.Info("plugin asks for a capability that is not granted; its calls will be denied",
				"plugin", p.info.ID(), "digest", got, "capability", c)
		}
	}
	p.noteIsolation(pr)
	p.cur = pr
	return p, nil
}

func (p *processPlugin) Info() transport.Info { return p.info }

func (p *processPlugin) Prepare(ctx context.Context, svc transport.Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	return transport.PrepareVia(ctx, p, processOps, svc, req)
}

func (p *processPlugin) Measure(ctx context.Context, svc transport.Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	return transport.MeasureVia(ctx, p, processOps, svc, req)
}

func (p *processPlugin) Node(ctx context.Context, svc transport.Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	return transport.NodeVia(ctx, p, processOps, svc, req)
}

func (p *processPlugin) Own(e *abi.Error) *abi.Error { return transport.OwnError(p.info, e) }

// Close waits (until ctx ends) for calls in flight, then stops the process.
// Calls that start afterwards fail.
func (p *processPlugin) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	idle := make(chan struct{})
	go func() {
		p.calls.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	p.mu.Lock()
	pr := p.cur
	p.cur = nil
	p.mu.Unlock()
	if pr != nil {
		pr.stop("the plugin was closed")
	}
	return nil
}

// acquire returns the running process, starting one when there is none
// (or the last one died), and counts the caller as a call in flight; the
// caller must call p.calls.Done. Concurrent callers share one start.
func (p *processPlugin) acquire(ctx context.Context) (*proc, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, transport.ErrClosed
	}
	p.calls.Add(1)
	for {
		if pr := p.cur; pr != nil {
			if !pr.exited() {
				p.mu.Unlock()
				return pr, nil
			}
			// It died between calls: reap it, then start another.
			p.cur = nil
			go pr.stop("the plugin process exited between calls")
		}
		if job := p.starting; job != nil {
			p.mu.Unlock()
			select {
			case <-job.done:
			case <-ctx.Done():
				p.calls.Done()
				return nil, ctx.Err()
			}
			if job.err != nil {
				p.calls.Done()
				return nil, job.err
			}
			p.mu.Lock()
			continue
		}
		job := &startJob{done: make(chan struct{})}
		p.starting = job
		p.mu.Unlock()
		// The start is shared by every waiting caller: it must not end
		// because the first one gave up.
		pr, raw, err := p.startDescribed(context.WithoutCancel(ctx))
		if err == nil {
			err = p.sameDescriptor(pr, raw)
		}
		p.mu.Lock()
		p.starting = nil
		switch {
		case err != nil:
			job.err = err
		case p.closed:
			go pr.stop("the plugin was closed")
			job.err = transport.ErrClosed
		default:
			p.cur = pr
			job.pr = pr
		}
		close(job.done)
		p.mu.Unlock()
		if job.err != nil {
			p.calls.Done()
			return nil, job.err
		}
		// A process that dies at once fails this call, not a loop of restarts.
		return pr, nil
	}
}

// sameDescriptor checks that a restarted process describes itself as the
// loaded one did (its binary is the same, byte for byte; its answer must
// be too).
func (p *processPlugin) sameDescriptor(pr *proc, raw []byte) error {
	var d abi.Descriptor
	err := transport.DecodeStrict(raw, &d)
	if err == nil {
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(p.info.Descriptor)
		if string(a) != string(b) {
			err = errors.New("the restarted process describes itself differently from the loaded one")
		}
	}
	if err != nil {
		pr.stop("descriptor refused")
		return transport.Named(p.info, abi.Errorf(abi.CodeABI, "restart: describe: %v", err))
	}
	return nil
}

// invoke runs one method on the process under the invocation's limits,
// decodes its result into out and applies check (nil: none); a result
// that does not decode or fails check is an ABI violation.
func (p *processPlugin) Invoke(ctx context.Context, svc transport.Services, method string, what transport.Doing, req, out any, check func() error) error {
	in, err := transport.EncodeMessage(req)
	if err != nil {
		return transport.Named(p.info, abi.Errorf(abi.CodeABI, "%s: encode request: %v", what, err))
	}
	pr, err := p.acquire(ctx)
	if err != nil {
		return p.startError(what.String(), err)
	}
	defer p.calls.Done()

	clock := transport.StartClock(ctx, p.opts.Limits.Timeout.Std())
	defer clock.Stop()
	var callCtx context.Context = clock
	g := transport.NewGuard(svc, p.info, p.opts, p.logger).ForRequest(req).Timed(clock)
	defer g.Finish(ctx)
	token, forget := pr.register(callCtx, g)
	defer forget()
	raw, err := pr.invoke(callCtx, method, in, token, p.opts.Limits.MaxOutputBytes)
	if err != nil {
		return p.callError(ctx, callCtx, pr, what.String(), err)
	}
	if len(raw) > p.opts.Limits.MaxOutputBytes {
		return transport.Named(p.info, abi.Errorf(abi.CodeOutputTooLarge, "%s: result is %d bytes, max_output_bytes is %d",
			what, len(raw), p.opts.Limits.MaxOutputBytes))
	}
	derr := transport.DecodeStrict(raw, out)
	if derr == nil && check != nil {
		derr = check()
	}
	if derr != nil {
		return transport.Named(p.info, abi.Errorf(abi.CodeABI, "%s: result: %v", what, derr))
	}
	return nil
}

// callError classifies a failed call. ctx is the caller's, callCtx the
// invocation's (the caller's plus the plugin's deadline).
func (p *processPlugin) callError(ctx, callCtx context.Context, pr *proc, what string, err error) error {
	st, _ := status.FromError(err)
	switch {
	case ctx.Err() == context.Canceled:
		// The caller gave up: the guest's context was cancelled with it,
		// and the process is kept.
		return fmt.Errorf("plugin %s@%s: %s: %w", p.info.ID(), p.info.Digest, what, context.Canceled)
	case callCtx.Err() == context.DeadlineExceeded || st.Code() == codes.DeadlineExceeded:
		who := fmt.Sprintf("passed its %s deadline", p.opts.Limits.Timeout.Std())
		if d, ok := ctx.Deadline(); ctx.Err() != nil || ok && !time.Now().Before(d) {
			// The caller's deadline, which the plugin also had: its own
			// end of the call may arrive before the caller's context says so.
			who = "the caller's deadline passed"
		}
		// What the process was doing is unknown (it may never return):
		// kill it; the next call starts a fresh one.
		pr.stop(what + ": " + who)
		return transport.Named(p.info, &abi.Error{Code: abi.CodeTimeout, Stderr: pr.stderr.String(),
			Message: what + ": " + who + "; plugin process killed, a fresh one serves the next call"})
	case st.Code() == codes.ResourceExhausted:
		return transport.Named(p.info, abi.Errorf(abi.CodeOutputTooLarge, "%s: result is larger than max_output_bytes %d (%s)",
			what, p.opts.Limits.MaxOutputBytes, st.Message()))
	case st.Code() == codes.InvalidArgument || st.Code() == codes.FailedPrecondition || st.Code() == codes.Unimplemented:
		// The guest answered, refusing the call: it is alive and is kept.
		return transport.Named(p.info, abi.Errorf(abi.CodeABI, "%s: the plugin refused the call: %s", what, transport.ClipMessage(st.Message())))
	}
	// Anything else is the process failing under the call: it died, or
	// broke the connection. Make sure it is gone, then say why.
	mine := what + " lost the plugin process"
	reason := pr.stop(mine)
	if reason != mine {
		return transport.Named(p.info, &abi.Error{Code: abi.CodeTrap, Retryable: true, Stderr: pr.stderr.String(),
			Message: fmt.Sprintf("%s: the plugin process was stopped while this call ran (%s); a fresh one serves the next call", what, reason)})
	}
	how := "the plugin process died (" + pr.runner.exit() + ")"
	if pr.runner.exit() == "" { // not reaped: cannot happen after stop, but say what is known
		how = "lost the plugin process (" + transport.ClipMessage(st.Message()) + ")"
	}
	return transport.Named(p.info, &abi.Error{Code: abi.CodeTrap, Stderr: pr.stderr.String(),
		Message: fmt.Sprintf("%s: %s; a fresh one serves the next call", what, how)})
}

// startError reports a call that could not get a process. The start's
// error is shared by every caller that waited for it: it is copied, not
// changed.
func (p *processPlugin) startError(what string, err error) error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		c := *ae
		c.Message = what + ": start plugin process: " + ae.Message
		return transport.Named(p.info, &c)
	}
	return fmt.Errorf("plugin %s@%s: %s: %w", p.info.ID(), p.info.Digest, what, err)
}

// invocation is one Prepare, Measure or Node call as the callback service
// sees it: its guard (grants, budgets) and its context (deadline).
type invocation struct {
	ctx context.Context
	g   *transport.Guard
}

// register makes an invocation reachable from the process's callbacks
// under a fresh random token, until forget is called.
func (pr *proc) register(ctx context.Context, g *transport.Guard) (token string, forget func()) {
	token = newToken()
	pr.mu.Lock()
	pr.invs[token] = &invocation{ctx: ctx, g: g}
	pr.mu.Unlock()
	return token, func() {
		pr.mu.Lock()
		delete(pr.invs, token)
		pr.mu.Unlock()
	}
}

func (pr *proc) lookup(token string) *invocation {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.invs[token]
}

// invoke sends one request. A result larger than maxOut (plus the
// envelope) is refused by gRPC before it is read whole.
func (pr *proc) invoke(ctx context.Context, method string, in []byte, token string, maxOut int) ([]byte, error) {
	ctx = metadata.AppendToOutgoingContext(ctx,
		native.MetaHostBroker, strconv.FormatUint(uint64(pr.brokerID), 10),
		native.MetaInvocation, token)
	out := new(wrapperspb.BytesValue)
	if err := pr.conn.Invoke(ctx, method, wrapperspb.Bytes(in), out, grpc.MaxCallRecvMsgSize(maxOut+envelope)); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

// envelope is room for the protobuf framing around a payload of the
// maximum size (tag and length varint).
const envelope = 16

// newToken is a fresh invocation token: 128 random bits, so a token cannot
// be guessed, only seen (and a process sees only its own invocations').
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// processOps are the gRPC methods behind the typed calls.
var processOps = transport.Operations{Prepare: native.MethodPrepare, Measure: native.MethodMeasure, Node: native.MethodNode}

// noteIsolation records the isolation the plugin's first process got,
// and warns once, at load, when a measure is missing.
func (p *processPlugin) noteIsolation(pr *proc) {
	rep := pr.runner.report
	p.info.Isolation = rep
	if m := rep.Missing(); m != 0 {
		p.logger.Warn("process plugin runs without full OS isolation; `isolation: required` would refuse it",
			"plugin", p.info.ID(), "digest", p.info.Digest, "missing", m.String(), "why", strings.Join(rep.Notes, "; "))
	}
}

// sandboxKnobs simulate a kernel that refuses isolation, for tests (set
// through Options.Test): the kernels the tests run on grant everything.
type sandboxKnobs struct {
	off        bool
	refuse     transport.Confinement
	noLandlock bool
}

func sandboxOf(opts transport.Options) sandboxKnobs {
	k := opts.Test.Sandbox()
	return sandboxKnobs{off: k.SandboxOff, refuse: transport.Confinement(k.Refuse), noLandlock: k.NoLandlock}
}

// CurrentStderr is what the running process has written to stderr so
// far (the tests of every transport read it for the race detector's
// reports from the guest side).
func (p *processPlugin) CurrentStderr() string {
	p.mu.Lock()
	pr := p.cur
	p.mu.Unlock()
	if pr == nil {
		return ""
	}
	return pr.stderr.String()
}
