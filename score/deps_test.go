package score_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNeutral: score links the standard library and abi, nothing else —
// no host package, no runtime, no network — and the G-Eval guest, the Wasm
// module that imports it, links nothing of the host either.
func TestNeutral(t *testing.T) {
	const module = "github.com/agentanvil/anvil/"
	banned := []string{"net/http", "crypto/tls", "os/exec"}
	t.Run("score", func(t *testing.T) {
		for _, d := range goListDeps(t, nil, ".") {
			switch {
			case d.std && slices.Contains(banned, d.path):
				t.Errorf("score links %s", d.path)
			case !d.std && d.path != module+"abi" && d.path != module+"score":
				t.Errorf("score links %s; it may link only the standard library and abi", d.path)
			}
		}
	})
	t.Run("geval guest", func(t *testing.T) {
		heavy := []string{
			module + "host",                 // the host, internal or not
			"github.com/tetratelabs/wazero", // and the host's copy, under module+"host"
			"github.com/extism/go-sdk",      // the host SDK; the guest's is go-pdk
			"google.golang.org/grpc",
			"github.com/hashicorp/go-plugin",
			"github.com/openai/openai-go",
		}
		deps := goListDeps(t, []string{"GOOS=wasip1", "GOARCH=wasm"}, module+"plugins/geval/wasm")
		var paths []string
		for _, d := range deps {
			paths = append(paths, d.path)
			for _, h := range heavy {
				if d.path == h || strings.HasPrefix(d.path, h+"/") {
					t.Errorf("the geval guest links %s (forbidden: %s)", d.path, h)
				}
			}
		}
		// The list is the guest's: it weights with score through the guest SDK.
		for _, want := range []string{module + "score", module + "sdk/guest"} {
			if !slices.Contains(paths, want) {
				t.Errorf("the geval guest does not link %s; is this the guest's dependency list?", want)
			}
		}
	})
}

type dep struct {
	path string
	std  bool
}

// goListDeps is `go list -deps pkgs...` with env added: every package pkgs
// link, themselves included. go test puts its own go command first in PATH.
func goListDeps(t *testing.T, env []string, pkgs ...string) []dep {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}"}, pkgs...)
	cmd := exec.Command(gocmd, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, stderr)
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
