package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/sdk/native"
)

// proc is one running plugin process: its go-plugin client, the gRPC
// connection to it, and the callback service the host serves it.
type proc struct {
	client   *goplugin.Client
	runner   *procRunner
	conn     *grpc.ClientConn
	brokerID uint32
	cb       *grpc.Server
	// stderr is the process's stderr over its whole life (its own fd 2,
	// where a Go panic goes, and os.Stderr, which go-plugin streams),
	// bounded head and tail.
	stderr *transport.StderrBuffer

	mu   sync.Mutex
	invs map[string]*invocation // by token

	stopOnce sync.Once
	reason   string // why the process was stopped; set once
}

// exited reports whether the process is gone.
func (pr *proc) exited() bool { return pr.client.Exited() }

// stop kills the process and everything it spawned, waits until it is
// reaped and its stderr read to the end, and shuts the callback service.
// It returns the reason of the first stop, which may be another caller's.
func (pr *proc) stop(reason string) string {
	pr.stopOnce.Do(func() {
		pr.reason = reason
		if pr.runner != nil && pr.runner.ID() != "" {
			_ = pr.runner.Kill(context.Background())
		}
		pr.client.Kill()
		if pr.runner != nil {
			pr.runner.release() // the connection to it is closed now
		}
		if pr.cb != nil {
			pr.cb.Stop()
		}
	})
	return pr.reason
}

// startDescribed starts a process and asks it for its descriptor (which
// also hands it the callback service's broker id). The describe call gets
// at least MinWarmup: it is not an invocation, and a process's first
// start on a loaded machine may be slow.
func (p *processPlugin) startDescribed(ctx context.Context) (*proc, []byte, error) {
	pr, err := p.startProcess()
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, max(p.opts.Limits.Timeout.Std(), transport.MinWarmup))
	defer cancel()
	raw, err := pr.invoke(dctx, native.MethodDescribe, nil, "", p.opts.Limits.MaxOutputBytes)
	if err == nil && len(raw) > p.opts.Limits.MaxOutputBytes {
		err = status.Errorf(codes.ResourceExhausted, "descriptor is %d bytes", len(raw))
	}
	if err == nil {
		return pr, raw, nil
	}
	st, _ := status.FromError(err)
	switch {
	case dctx.Err() != nil || st.Code() == codes.DeadlineExceeded:
		pr.stop("describe timed out")
		return nil, nil, p.fault(abi.CodeTimeout, pr.stderr.String(), "describe: no answer within %s", max(p.opts.Limits.Timeout.Std(), transport.MinWarmup))
	case st.Code() == codes.ResourceExhausted:
		pr.stop("descriptor too large")
		return nil, nil, p.fault(abi.CodeOutputTooLarge, "", "describe: the descriptor is larger than max_output_bytes %d", p.opts.Limits.MaxOutputBytes)
	case st.Code() == codes.InvalidArgument || st.Code() == codes.FailedPrecondition || st.Code() == codes.Unimplemented:
		pr.stop("describe refused")
		return nil, nil, p.fault(abi.CodeABI, pr.stderr.String(), "describe: the plugin refused the call: %s", transport.ClipMessage(st.Message()))
	}
	pr.stop("describe failed")
	return nil, nil, p.fault(abi.CodeTrap, pr.stderr.String(), "describe: the plugin process died (%s: %s)", pr.runner.exit(), transport.ClipMessage(st.Message()))
}

// fault is an error about the plugin: named by plugin@version once the
// descriptor is known, by path before (when its name is not trusted yet).
func (p *processPlugin) fault(code abi.Code, stderr, format string, args ...any) *abi.Error {
	e := abi.Errorf(code, format, args...)
	e.Stderr = stderr
	if p.info.Descriptor.Version == "" {
		e.Plugin, e.Digest = p.info.Path, p.info.Digest
		return e
	}
	return transport.Named(p.info, e)
}

// startProcess verifies the binary and starts it through go-plugin, then
// starts the callback service on a broker id of its own.
func (p *processPlugin) startProcess() (*proc, error) {
	pr := &proc{stderr: transport.NewStderrBuffer(transport.StderrKeep), invs: map[string]*invocation{}}
	var refused error // why RunnerFunc refused to start the binary
	pr.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  native.Handshake(),
		Plugins:          goplugin.PluginSet{native.PluginSetName: &hostSide{}},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// Not the host's environment: go-plugin's handshake variables only.
		SkipHostEnv: true,
		// go-plugin checks ClientConfig.SecureConfig against Cmd.Path,
		// which a RunnerFunc start does not have; a stronger check runs
		// here, at the same moment (after the environment is prepared,
		// immediately before the process is created): on the open file
		// that is then executed, not on the path.
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			bin, err := openVerified(p.path, p.sum, p.info.Digest)
			if err != nil {
				refused = err
				_ = os.RemoveAll(socketDir)
				return nil, err
			}
			pr.runner = newProcRunner(launch{path: p.path, bin: bin, env: cmd.Env, socketDir: socketDir,
				mode: p.opts.Isolation, knobs: sandboxOf(p.opts)})
			return pr.runner, nil
		},
		// A plugin that runs as nobody (under a root host) must reach its
		// socket directory and the host's callback socket.
		UnixSocketConfig: &goplugin.UnixSocketConfig{Group: socketGroup(sandboxOf(p.opts))},

		Stderr:       pr.stderr,
		SyncStderr:   pr.stderr,
		SyncStdout:   io.Discard,
		Logger:       hclog.NewNullLogger(),
		StartTimeout: max(p.opts.Limits.Timeout.Std(), transport.MinWarmup),
	})
	rpc, err := pr.client.Client()
	if err != nil {
		pr.stop("start failed")
		return nil, p.startFailure(pr, refused, err)
	}
	raw, err := rpc.Dispense(native.PluginSetName)
	if err != nil {
		pr.stop("start failed")
		return nil, p.fault(abi.CodeABI, pr.stderr.String(), "start: %v", err)
	}
	d := raw.(*dispensed)
	pr.conn = d.conn
	pr.brokerID = d.broker.NextId()
	ln, err := d.broker.Accept(pr.brokerID)
	if err != nil {
		pr.stop("start failed")
		return nil, p.fault(abi.CodeABI, pr.stderr.String(), "start: callback service: %v", err)
	}
	// A judge batch up to max_output_bytes is read and refused by the
	// callback with a typed error; gRPC refuses anything far larger
	// before reading it.
	pr.cb = grpc.NewServer(grpc.MaxRecvMsgSize(p.opts.Limits.MaxOutputBytes + 1<<20))
	native.RegisterHostServer(pr.cb, &callbacks{p: p, pr: pr})
	go func() { _ = pr.cb.Serve(ln) }()
	p.starts.Add(1)
	return pr, nil
}

var pluginVersionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// startFailure turns go-plugin's start errors into the ABI's.
func (p *processPlugin) startFailure(pr *proc, refused, err error) error {
	msg := err.Error()
	stderr := pr.stderr.String()
	exit := ""
	if pr.runner != nil {
		exit = pr.runner.exit()
	}
	var iso *isolationError
	switch {
	case refused != nil:
		return p.fault(abi.CodeABI, "", "%v", refused)
	case errors.As(err, &iso):
		if p.info.Descriptor.Version != "" {
			return err // a restart: startError names the plugin
		}
		// At load its name is not known yet, nor trusted: its path names it.
		return fmt.Errorf("plugin %s@%s: %w", p.info.Path, p.info.Digest, err)
	case pluginVersionRE.MatchString(msg):
		v := pluginVersionRE.FindStringSubmatch(msg)[1]
		return p.fault(abi.CodeABI, stderr, "the process speaks Anvil ABI v%s (go-plugin protocol version %s); this host speaks ABI v%d",
			v, v, abi.Major)
	case strings.Contains(msg, "exited before we could connect"),
		strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return p.fault(abi.CodeABI, stderr, "the process exited (%s) before the go-plugin handshake: not an Anvil process plugin "+
			"(its main must call sdk/native.Serve), or it failed to start; see its stderr", exit)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return p.fault(abi.CodeTimeout, stderr, "no go-plugin handshake within %s", max(p.opts.Limits.Timeout.Std(), transport.MinWarmup))
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return p.fault(abi.CodeABI, stderr, "not a go-plugin plugin: %s", transport.ClipMessage(msg))
	case strings.Contains(msg, "unsupported plugin protocol"):
		return p.fault(abi.CodeABI, stderr, "the process serves go-plugin's net/rpc; Anvil process plugins speak gRPC only")
	}
	return p.fault(abi.CodeABI, stderr, "start: %s", transport.ClipMessage(msg))
}

// hostSide is the plugin in go-plugin's plugin set, host side: it hands
// out the raw connection and broker; the methods are called by name.
type hostSide struct {
	goplugin.NetRPCUnsupportedPlugin
}

type dispensed struct {
	conn   *grpc.ClientConn
	broker *goplugin.GRPCBroker
}

func (*hostSide) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("anvil host: the host serves no plugin")
}

func (*hostSide) GRPCClient(_ context.Context, b *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &dispensed{conn: c, broker: b}, nil
}
