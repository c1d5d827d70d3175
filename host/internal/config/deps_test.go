package config_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are the paths parsing a config must not link: the plugin runtime
// (wazero, Extism's host SDK, go-plugin and its gRPC) and the judge client
// (openai-go, net/http, crypto/tls), and the host packages that hold them.
// A path matches itself and the packages under it.
var heavy = []string{
	"github.com/tetratelabs/wazero",
	"github.com/agentanvil/anvil/host/internal/wazero",
	"github.com/extism",
	"google.golang.org/grpc",
	"github.com/hashicorp/go-plugin",
	"github.com/openai/openai-go",
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
	deps := goListDeps(t, ".")
	for _, d := range deps {
		for _, h := range heavy {
			if d.path == h || strings.HasPrefix(d.path, h+"/") {
				t.Errorf("parsing a config links %s (forbidden: %s)", d.path, h)
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
	deps := goListDeps(t, "../judgeconfig", "../pluginconfig")
	var own []string
	for _, d := range deps {
		if d.std {
			continue
		}
		own = append(own, d.path)
		if !slices.Contains(allowed, d.path) {
			t.Errorf("the config surface links %s; it may link only the standard library and %v", d.path, allowed)
		}
	}
	if !slices.Contains(own, "github.com/agentanvil/anvil/host/internal/judgeconfig") {
		t.Errorf("go list did not list judgeconfig itself: %v", own)
	}
}

type dep struct {
	path string
	std  bool
}

// goListDeps is `go list -deps pkgs...`: every package pkgs link,
// themselves included. go test puts its own go command first in PATH.
func goListDeps(t *testing.T, pkgs ...string) []dep {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}"}, pkgs...)
	out, err := exec.Command(gocmd, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	var deps []dep
	for line := range strings.Lines(string(out)) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		deps = append(deps, dep{path, std == "true"})
	}
	if len(deps) == 0 {
		t.Fatalf("go list -deps %v listed nothing", pkgs)
	}
	return deps
}
