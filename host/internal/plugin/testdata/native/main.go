// Command native is the process-transport guest of host/plugin's tests:
// one binary (linked once, which keeps the tests fast) that is whichever
// plugin its file name says — the host gives a plugin process no
// arguments and no environment, so the name is the only input. The tests
// build it once and hard-link it under each name:
//
//	textcheck, geval, dag, rag, the first-party plugins, via sdk/native.Serve
//	content, agent, similarity
//	hostile                     misbehaviour on request (metric kind "hostile")
//	canary                      hostile, after leaving <path>.started behind
//	abi2                        go-plugin handshake for ABI major 2
//	nocookie                    a go-plugin binary of another application
//	descmajor                   hand-written wire (no sdk/native), descriptor abi_major 2
//	unasked, dupdesc, refschema the sandbox's attacks on the host (failclosed.go)
//	advertise-tcp-<port>,       a handshake naming an address the host must not dial
//	advertise-unix-<hex path>   (escape.go)
//
// The hostile kind's escape attempts (snoop, net, write, privs, spawn)
// are in escape.go.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/plugins/content"
	dagkinds "github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/plugins/similarity"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/native"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == grandchildArg {
		select {} // what "spawn" leaves behind: it lives until killed
	}
	name := filepath.Base(os.Args[0])
	if strings.HasPrefix(name, "advertise-") {
		advertise(name) // escape.go
		return
	}
	switch name {
	case "textcheck":
		native.Serve(textcheck.Plugin())
	case "geval":
		native.Serve(geval.Plugin())
	case "dag":
		native.Serve(dagkinds.Plugin())
	case "rag":
		native.Serve(rag.Plugin())
	case "content":
		native.Serve(content.Plugin())
	case "agent":
		native.Serve(agent.Plugin())
	case "similarity":
		native.Serve(similarity.Plugin())
	case "hostile":
		native.Serve(hostile())
	case "canary":
		if err := os.WriteFile(os.Args[0]+".started", []byte("started\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "canary:", err)
		}
		native.Serve(hostile())
	case "abi2":
		hs := native.Handshake()
		hs.ProtocolVersion = 2
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: hs,
			Plugins:         goplugin.PluginSet{native.PluginSetName: &rawPlugin{}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	case "nocookie":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "OTHER_APP_PLUGIN", MagicCookieValue: "x"},
			Plugins:         goplugin.PluginSet{native.PluginSetName: &rawPlugin{}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	case "unasked", "dupdesc", "refschema": // failclosed.go
		serveSandbox(name)
	case "descmajor":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: native.Handshake(),
			Plugins:         goplugin.PluginSet{native.PluginSetName: &rawPlugin{describe: `{"name":"descmajor","version":"2.0.0","abi_major":2,"abi_minor":0,"kinds":[{"name":"x","role":"metric"}]}`}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "native test guest: unknown personality %q\n", name)
		os.Exit(2)
	}
}

// rawPlugin serves the wire by hand, as a guest in another language
// would: only Describe, answering a fixed descriptor.
type rawPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	describe string
}

func (r *rawPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: native.ServiceName,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Describe",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(wrapperspb.BytesValue)); err != nil {
					return nil, err
				}
				return wrapperspb.Bytes([]byte(r.describe)), nil
			},
		}},
	}, r)
	return nil
}

func (r *rawPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("guest only")
}

// hostile is a plugin that misbehaves on request.
func hostile() *sdk.Plugin {
	return &sdk.Plugin{
		Name:    "hostile",
		Version: "0.0.2",
		// It asks for the judge, so that a grant makes judge calls
		// possible and the budgets can be tested.
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds:        []sdk.Kind{&sdk.MetricKind[config]{Name: "hostile", Measure: measure}},
	}
}

type config struct {
	Behaviour string `json:"behaviour" jsonschema:"required"`
	Size      int    `json:"size,omitempty"`
	Calls     int    `json:"calls,omitempty"`
	N         int    `json:"n,omitempty"`
	Key       string `json:"key,omitempty"`
	Path      string `json:"path,omitempty"`
}

func measure(ctx context.Context, h sdk.Host, cfg *config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	obs := map[string]any{}
	switch cfg.Behaviour {
	case "echo":
		return result(1, req.Case.ID+"|"+req.Case.Input, nil), nil
	case "panic":
		panic("hostile: deliberate panic in measure")
	case "stderrspam":
		// Straight to fd 2, as a native library would write (os.Stderr
		// is go-plugin's stream to the host, a separate channel).
		fd2 := os.NewFile(2, "stderr")
		fd2.WriteString("hostile: spam begins\n")
		line := strings.Repeat("spam ", 20) + "\n"
		for i := 0; i < 20000; i++ {
			fd2.WriteString(line)
		}
		panic("hostile: panic after spamming stderr")
	case "exit":
		os.Exit(3)
	case "hang":
		select {} // ignores its context: only a kill ends it
	case "env":
		obs["HOME"] = os.Getenv("HOME")
		obs["PATH"] = os.Getenv("PATH")
		obs["OPENAI_API_KEY"] = os.Getenv("OPENAI_API_KEY")
		obs["environ"] = os.Environ()
		obs["args"] = os.Args
		wd, _ := os.Getwd()
		obs["wd"] = wd
		in, inErr := os.Stdin.Stat()
		null, nullErr := os.Stat(os.DevNull)
		obs["stdin_is_devnull"] = inErr == nil && nullErr == nil && os.SameFile(in, null)
	case "bigoutput":
		return result(0, strings.Repeat("x", cfg.Size), nil), nil
	case "judge":
		_, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "are you there?"}}}})
		return nil, err
	case "judge_many":
		for i := 0; i < cfg.Calls; i++ {
			if _, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "again"}}}}); err != nil {
				return nil, err
			}
		}
	case "judge_big":
		_, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: strings.Repeat("y", cfg.Size)}}}})
		return nil, err
	case "log":
		h.Log(ctx, slog.LevelWarn, "hostile says hello", "case", req.Case.ID, "n", 3)
	case "barrier":
		// Returns once cfg.N calls with this key are inside the process
		// at the same time: proof that one process serves concurrently.
		// Each logs first, so the callbacks run concurrently too.
		h.Log(ctx, slog.LevelInfo, "arrived", "case", req.Case.ID)
		if err := arrive(ctx, cfg.Key, cfg.N); err != nil {
			return nil, err
		}
		return result(1, req.Case.ID+"|"+req.Case.Input, nil), nil
	case "logflood", "forge": // failclosed.go
		return sandboxBehaviour(ctx, h, cfg, req)
	case "snoop", "net", "write", "privs", "spawn": // escape.go
		return result(0, cfg.Behaviour+" observed", escape(ctx, cfg.Behaviour, cfg.N, cfg.Path, cfg.Key)), nil
	default:
		return nil, &abi.Error{Code: abi.CodeInvalidConfig, Field: "behaviour", Message: "unknown behaviour " + cfg.Behaviour}
	}
	return result(0, cfg.Behaviour+" observed", obs), nil
}

var (
	barrierMu sync.Mutex
	barriers  = map[string]*barrier{}
)

type barrier struct {
	arrived int
	open    chan struct{}
}

func arrive(ctx context.Context, key string, n int) error {
	barrierMu.Lock()
	b := barriers[key]
	if b == nil {
		b = &barrier{open: make(chan struct{})}
		barriers[key] = b
	}
	b.arrived++
	if b.arrived == n {
		close(b.open)
	}
	barrierMu.Unlock()
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func result(score float64, reason string, details map[string]any) *abi.MeasureResult {
	r := &abi.MeasureResult{Score: &score, Success: score == 1, Reason: reason}
	if details != nil {
		r.Details, _ = json.Marshal(details)
	}
	return r
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
