package native

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentanvil/anvil/abi"
)

// The wire of the process transport. It is public because two sides
// speak it — this package in the guest, host/internal/plugin in the host — and
// because a guest written in another language implements it by hand; see
// docs/process-plugins.md.
const (
	// MagicCookieKey and MagicCookieValue are go-plugin's handshake
	// cookie: the host sets the variable in the process's (otherwise
	// empty) environment, and a go-plugin guest refuses to start without
	// it. It only tells "started by an Anvil host" from "run by hand"; it
	// is not a secret.
	MagicCookieKey   = "ANVIL_PLUGIN"
	MagicCookieValue = "anvil-process-plugin"

	// PluginSetName is the name of the one plugin in go-plugin's plugin set.
	PluginSetName = "anvil"

	// ServiceName is the gRPC service a guest serves; the ABI major is in
	// the name, like the Wasm marker export anvil_abi_v1.
	ServiceName = "anvil.v1.Plugin"
	// HostServiceName is the callback service the host serves to the guest
	// through go-plugin's GRPCBroker.
	HostServiceName = "anvil.v1.Host"

	// Full method names. Every method takes and returns a
	// google.protobuf.BytesValue holding the JSON of an abi message:
	//
	//	Describe  (empty)               -> abi.Descriptor
	//	Prepare   abi.PrepareRequest    -> abi.PrepareResult
	//	Measure   abi.MeasureRequest    -> abi.MeasureResult
	//	Node      abi.NodeRequest       -> abi.NodeResult
	//	Host/Judge abi.JudgeBatch       -> abi.JudgeBatchResult
	//	Host/Embed abi.EmbedRequest     -> abi.EmbedResult (ABI minor 5)
	//	Host/Log   abi.LogRecord        -> (empty)
	MethodDescribe  = "/" + ServiceName + "/Describe"
	MethodPrepare   = "/" + ServiceName + "/Prepare"
	MethodMeasure   = "/" + ServiceName + "/Measure"
	MethodNode      = "/" + ServiceName + "/Node"
	MethodHostJudge = "/" + HostServiceName + "/Judge"
	MethodHostLog   = "/" + HostServiceName + "/Log"
	MethodHostEmbed = "/" + HostServiceName + "/Embed"

	// MetaHostBroker is the gRPC metadata key, on every request the host
	// sends, holding the GRPCBroker id (decimal) of the host's callback
	// service. It does not change for the life of a process; a guest dials
	// it when it first sees it (go-plugin forgets an undialled broker id
	// after five seconds, and Describe is always the first request).
	MetaHostBroker = "anvil-host-broker"
	// MetaInvocation is the metadata key holding the invocation token: the
	// host sends it with every Prepare, Measure and Node request, and the
	// guest sends it back with every callback made for that invocation.
	// It is how the host finds the invocation's grants and budgets.
	MetaInvocation = "anvil-invocation"
)

// Handshake is go-plugin's handshake for ABI major abi.Major: the
// protocol version is the ABI major, so a host refuses a guest built for
// another major before any request is sent.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  abi.Major,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// bytesHandler is one unary method of a hand-written service: JSON in, JSON out.
type bytesHandler func(srv any, ctx context.Context, in []byte) ([]byte, error)

// unary builds the grpc.MethodDesc protoc would generate for a method
// taking and returning google.protobuf.BytesValue.
func unary(service, method string, call bytesHandler) grpc.MethodDesc {
	full := "/" + service + "/" + method
	return grpc.MethodDesc{
		MethodName: method,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				out, err := call(srv, ctx, req.(*wrapperspb.BytesValue).GetValue())
				if err != nil {
					return nil, err
				}
				return wrapperspb.Bytes(out), nil
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
		},
	}
}

// pluginServer is the guest's side of ServiceName.
type pluginServer interface {
	describe(ctx context.Context, in []byte) ([]byte, error)
	prepare(ctx context.Context, in []byte) ([]byte, error)
	measure(ctx context.Context, in []byte) ([]byte, error)
	node(ctx context.Context, in []byte) ([]byte, error)
}

var pluginServiceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*pluginServer)(nil),
	Methods: []grpc.MethodDesc{
		unary(ServiceName, "Describe", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(pluginServer).describe(ctx, in)
		}),
		unary(ServiceName, "Prepare", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(pluginServer).prepare(ctx, in)
		}),
		unary(ServiceName, "Measure", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(pluginServer).measure(ctx, in)
		}),
		unary(ServiceName, "Node", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(pluginServer).node(ctx, in)
		}),
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "anvil/v1/plugin (hand-written; messages are google.protobuf.BytesValue)",
}

// HostServer is the host's side of the callback service. host/internal/plugin
// implements it; a guest never does.
type HostServer interface {
	// Judge answers the JSON of an abi.JudgeBatch with the JSON of an
	// abi.JudgeBatchResult. Refusals (capability, budget, size) are data
	// in the result, not errors.
	Judge(ctx context.Context, batch []byte) ([]byte, error)
	// Log records the JSON of an abi.LogRecord.
	Log(ctx context.Context, record []byte) error
	// Embed answers the JSON of an abi.EmbedRequest with the JSON of an
	// abi.EmbedResult (ABI minor 5); refusals are data, as in Judge.
	Embed(ctx context.Context, req []byte) ([]byte, error)
}

var hostServiceDesc = grpc.ServiceDesc{
	ServiceName: HostServiceName,
	HandlerType: (*HostServer)(nil),
	Methods: []grpc.MethodDesc{
		unary(HostServiceName, "Judge", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(HostServer).Judge(ctx, in)
		}),
		unary(HostServiceName, "Log", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return nil, s.(HostServer).Log(ctx, in)
		}),
		unary(HostServiceName, "Embed", func(s any, ctx context.Context, in []byte) ([]byte, error) {
			return s.(HostServer).Embed(ctx, in)
		}),
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "anvil/v1/host (hand-written; messages are google.protobuf.BytesValue)",
}

// RegisterHostServer registers the host's callback service on s.
func RegisterHostServer(s grpc.ServiceRegistrar, h HostServer) {
	s.RegisterService(&hostServiceDesc, h)
}
