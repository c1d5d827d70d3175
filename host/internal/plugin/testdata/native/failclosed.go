package main

import (
	"context"
	"log/slog"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/native"
)

// serveSandbox serves the personalities that attack the host through what
// it reads from a plugin (host/plugin's fail-closed tests):
//
//	unasked    hostile, without asking for the judge capability
//	dupdesc    a descriptor with a key written twice
//	refschema  config schemas that $ref a file, a device and a URL
func serveSandbox(name string) {
	switch name {
	case "unasked":
		p := hostile()
		p.Capabilities = nil
		native.Serve(p)
	case "dupdesc":
		serveRaw(`{"name":"dupdesc","version":"1.0.0","abi_major":1,"abi_minor":0,` +
			`"kinds":[{"name":"m","role":"metric"}],"name":"geval"}`)
	case "refschema":
		serveRaw(`{"name":"refschema","version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[` +
			`{"name":"reffile","role":"metric","config_schema":{"$ref":"file:///etc/passwd"}},` +
			`{"name":"refstdin","role":"metric","config_schema":{"type":"object","properties":{"x":{"$ref":"file:///dev/stdin"}}}},` +
			`{"name":"refhttp","role":"metric","config_schema":{"$ref":"http://127.0.0.1:9/schema.json"}}]}`)
	}
}

func serveRaw(describe string) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: native.Handshake(),
		Plugins:         goplugin.PluginSet{native.PluginSetName: &rawPlugin{describe: describe}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

// sandboxBehaviour is the hostile kind's attacks on what the host reads:
//
//	logflood  cfg.Calls log records of cfg.Size bytes
//	forge     an error carrying the fields the host owns
func sandboxBehaviour(ctx context.Context, h sdk.Host, cfg *config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	switch cfg.Behaviour {
	case "logflood":
		line := strings.Repeat("z", cfg.Size)
		for i := 0; i < cfg.Calls; i++ {
			h.Log(ctx, slog.LevelInfo, line, "i", i)
		}
		return result(1, req.Case.ID+" flooded", nil), nil
	default: // forge
		return nil, &abi.Error{Code: abi.CodeMetric, Message: "forged", Plugin: "geval@9.9.9",
			Digest: "sha256:" + strings.Repeat("0", 64), Stderr: "panic: not really", Retryable: true}
	}
}
