// Package native serves an sdk.Plugin as a native plugin process: Anvil's
// "process" transport, for kinds that need native libraries or another
// runtime and so cannot be built to WebAssembly. The same sdk.Plugin can
// be linked into the host, built to Wasm with sdk/guest, or served here:
//
//	package main
//
//	import (
//		"github.com/agentanvil/anvil/sdk/native"
//		"example.com/mymetric"
//	)
//
//	func main() { native.Serve(mymetric.Plugin()) }
//
// built with a plain `go build -trimpath -o mymetric .` and configured with
// `transport: process` and the binary's sha256.
//
// # Wire
//
// github.com/hashicorp/go-plugin over gRPC only (no net/rpc), with the
// handshake of Handshake: the go-plugin protocol version is the ABI major.
// The gRPC services are written by hand (there are no .proto files to
// compile): every method takes and returns a google.protobuf.BytesValue
// holding the JSON of the abi message, exactly the JSON the Wasm transport
// exchanges. The guest serves ServiceName; the host serves
// HostServiceName (judge batches, logs) through go-plugin's GRPCBroker, on
// the broker id it sends in the MetaHostBroker metadata of every request.
//
// # Concurrency
//
// Unlike a Wasm instance, one plugin process serves many calls at once:
// gRPC runs each request on its own goroutine. The sdk.Plugin served must
// therefore be safe for concurrent use — kinds written as the sdk asks
// (no state outside their arguments) are.
//
// # Errors
//
// A kind's errors are results, as in every transport. A request that does
// not decode (InvalidArgument) or a result that does not encode
// (FailedPrecondition) is answered with a gRPC status; the host reports an
// ABI violation and keeps the process. A panic is deliberately not
// recovered: the process dies, its stderr (with the panic) reaches the
// host's error, and the host starts a fresh process for the next call.
//
// # What the process can reach
//
// Everything its operating-system user can: files, network, clock. The
// host starts it with an empty environment (no API keys ever reach it),
// no stdin and its own process group, verifies its sha256 before every
// start, and bounds each call's time and output; filesystem and network
// isolation are the operator's job (container, seccomp, user).
package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Serve serves p as a process plugin until the host stops the process. A
// plugin binary's main calls it and nothing else; run by hand (without
// the host's handshake cookie) the binary says it is a plugin and exits 1.
func Serve(p *sdk.Plugin) {
	if p == nil {
		panic("native.Serve: nil plugin")
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         goplugin.PluginSet{PluginSetName: &grpcPlugin{p: p}},
		// Requests are the host's (a case with long contexts may pass
		// gRPC's 4 MiB default); the host caps what it accepts back.
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(math.MaxInt32), grpc.MaxSendMsgSize(math.MaxInt32))...)
		},
		// go-plugin's own chatter stays out of the stderr the host
		// captures for errors; its failures do not.
		Logger: hclog.New(&hclog.LoggerOptions{Name: "anvil-plugin", Level: hclog.Error, Output: os.Stderr}),
	})
}

// grpcPlugin is the plugin in go-plugin's plugin set, guest side.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	p *sdk.Plugin
}

func (g *grpcPlugin) GRPCServer(b *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&pluginServiceDesc, &server{p: g.p, broker: b, hosts: map[uint32]*hostConn{}})
	return nil
}

func (g *grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("native: the guest side has no client; the host dispenses the plugin")
}

// server implements pluginServer over an sdk.Plugin.
type server struct {
	p      *sdk.Plugin
	broker *goplugin.GRPCBroker

	mu    sync.Mutex
	hosts map[uint32]*hostConn // by broker id; one per host process in practice
}

// hostConn is a lazily established connection to the host's callbacks.
type hostConn struct {
	once sync.Once
	conn *grpc.ClientConn
	err  error
}

// host returns the callback connection named by the request's metadata,
// dialling it the first time, or nil when the request names none.
func (s *server) host(ctx context.Context) (*grpc.ClientConn, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids := md.Get(MetaHostBroker)
	if len(ids) == 0 {
		return nil, nil
	}
	id64, err := strconv.ParseUint(ids[0], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("metadata %s %q: %v", MetaHostBroker, ids[0], err)
	}
	id := uint32(id64)
	s.mu.Lock()
	hc, ok := s.hosts[id]
	if !ok {
		hc = &hostConn{}
		s.hosts[id] = hc
	}
	s.mu.Unlock()
	hc.once.Do(func() { hc.conn, hc.err = s.broker.Dial(id) })
	return hc.conn, hc.err
}

// hostFor is the sdk.Host of one request.
func (s *server) hostFor(ctx context.Context) sdk.Host {
	conn, err := s.host(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	var token string
	if v := md.Get(MetaInvocation); len(v) > 0 {
		token = v[0]
	}
	return &processHost{conn: conn, dialErr: err, token: token}
}

func (s *server) describe(ctx context.Context, _ []byte) ([]byte, error) {
	// Dial the host's callbacks now: Describe is the first request of a
	// process, and go-plugin forgets an undialled broker id after 5 s.
	if _, err := s.host(ctx); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "anvil: dial the host's callback service: %v", err)
	}
	return respond(s.p.Describe())
}

func (s *server) prepare(ctx context.Context, in []byte) ([]byte, error) {
	var req abi.PrepareRequest
	if err := decode(in, &req); err != nil {
		return nil, err
	}
	return respond(s.p.Prepare(ctx, s.hostFor(ctx), &req))
}

func (s *server) measure(ctx context.Context, in []byte) ([]byte, error) {
	var req abi.MeasureRequest
	if err := decode(in, &req); err != nil {
		return nil, err
	}
	return respond(s.p.Measure(ctx, s.hostFor(ctx), &req))
}

func (s *server) node(ctx context.Context, in []byte) ([]byte, error) {
	var req abi.NodeRequest
	if err := decode(in, &req); err != nil {
		return nil, err
	}
	return respond(s.p.Node(ctx, s.hostFor(ctx), &req))
}

// decode reads a request; one that does not decode is the host misusing
// the ABI, answered InvalidArgument.
func decode(in []byte, v any) error {
	if err := json.Unmarshal(in, v); err != nil {
		return status.Errorf(codes.InvalidArgument, "anvil: decode request: %v", err)
	}
	return nil
}

func respond(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "anvil: encode result: %v", err)
	}
	return b, nil
}
