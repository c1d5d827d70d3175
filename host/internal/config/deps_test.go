package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/internal/godeps"
)

// heavy are the paths parsing a config must not link: the plugin runtime
// (wazero, Extism's host SDK, go-plugin and its gRPC) and the judge client
// (openai-go, net/http, crypto/tls), and the host packages that hold them.
// A path matches itself and the packages under it.
var heavy = []string{
	"github.com/tetratelabs/wazero",
	"github.com/extism",
	"google.golang.org/grpc",
	"github.com/hashicorp/go-plugin",
	"github.com/openai/openai-go/v3",
	"net/http",
	"crypto/tls",
	"github.com/agentanvil/anvil/host/internal/judge",
	"github.com/agentanvil/anvil/host/internal/plugin",
}

// TestParsingLinksNoRuntime: a program that only parses anvil.yaml links
// the config package and its small, pure dependencies. Before
// host/internal/judgeconfig and pluginconfig existed it linked 459
// packages, wazero, gRPC and openai-go among them.
func TestParsingLinksNoRuntime(t *testing.T) {
	deps := godeps.List(t, nil, ".")
	for _, d := range deps {
		for _, h := range heavy {
			if d.Path == h || strings.HasPrefix(d.Path, h+"/") {
				t.Errorf("parsing a config links %s (forbidden: %s)", d.Path, h)
			}
		}
	}
	// The bound leaves room to grow and catches a heavy import that is not
	// on the list above: today the count is about 110, standard library
	// included.
	if len(deps) > 150 {
		t.Errorf("parsing a config links %d packages; want at most 150", len(deps))
	}
}

// TestConfigSurfaceIsPure: judgeconfig and pluginconfig, the types the
// config decodes into, link the standard library and the module's own
// leaf packages, nothing else — the promise their package docs make.
func TestConfigSurfaceIsPure(t *testing.T) {
	allowed := []string{
		"github.com/agentanvil/anvil/abi",
		"github.com/agentanvil/anvil/host/internal/duration",
		"github.com/agentanvil/anvil/host/internal/judgeconfig",
		"github.com/agentanvil/anvil/host/internal/pluginconfig",
	}
	deps := godeps.List(t, nil, "../judgeconfig", "../pluginconfig")
	var own []string
	for _, d := range deps {
		if d.Std {
			continue
		}
		own = append(own, d.Path)
		if !slices.Contains(allowed, d.Path) {
			t.Errorf("the config surface links %s; it may link only the standard library and %v", d.Path, allowed)
		}
	}
	if !slices.Contains(own, "github.com/agentanvil/anvil/host/internal/judgeconfig") {
		t.Errorf("go list did not list judgeconfig itself: %v", own)
	}
}
