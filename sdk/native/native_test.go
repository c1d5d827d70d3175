package native

import (
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// TestWire pins the names a guest in another language implements: they
// are the protocol, not implementation details.
func TestWire(t *testing.T) {
	hs := Handshake()
	if hs.ProtocolVersion != abi.Major || hs.MagicCookieKey != "ANVIL_PLUGIN" || hs.MagicCookieValue == "" {
		t.Errorf("handshake %+v: want protocol version %d (the ABI major) and cookie ANVIL_PLUGIN", hs, abi.Major)
	}
	want := map[string]string{
		MethodDescribe: "/anvil.v1.Plugin/Describe", MethodPrepare: "/anvil.v1.Plugin/Prepare",
		MethodMeasure: "/anvil.v1.Plugin/Measure", MethodNode: "/anvil.v1.Plugin/Node",
		MethodHostJudge: "/anvil.v1.Host/Judge", MethodHostLog: "/anvil.v1.Host/Log",
		MethodHostEmbed: "/anvil.v1.Host/Embed",
	}
	for got, w := range want {
		if got != w {
			t.Errorf("method %q, want %q", got, w)
		}
	}
	served := map[string]bool{}
	for _, m := range pluginServiceDesc.Methods {
		served["/"+pluginServiceDesc.ServiceName+"/"+m.MethodName] = true
	}
	for _, m := range hostServiceDesc.Methods {
		served["/"+hostServiceDesc.ServiceName+"/"+m.MethodName] = true
	}
	for name := range want {
		if !served[name] {
			t.Errorf("%s is not in a service description", name)
		}
	}
	if len(served) != len(want) {
		t.Errorf("services describe %d methods, want %d", len(served), len(want))
	}
}
