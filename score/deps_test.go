package score_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/internal/godeps"
)

// TestNeutral: score links the standard library and abi, nothing else —
// no host package, no runtime, no network — and the G-Eval guest, the Wasm
// module that imports it, links nothing of the host either.
func TestNeutral(t *testing.T) {
	t.Parallel()
	const module = "github.com/agentanvil/anvil/"
	banned := []string{"net/http", "crypto/tls", "os/exec"}
	t.Run("score", func(t *testing.T) {
		for _, d := range godeps.List(t, nil, ".") {
			switch {
			case d.Std && slices.Contains(banned, d.Path):
				t.Errorf("score links %s", d.Path)
			case !d.Std && d.Path != module+"abi" && d.Path != module+"score":
				t.Errorf("score links %s; it may link only the standard library and abi", d.Path)
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
			"github.com/openai/openai-go/v3",
		}
		deps := godeps.List(t, []string{"GOOS=wasip1", "GOARCH=wasm"}, module+"plugins/geval/wasm")
		var paths []string
		for _, d := range deps {
			paths = append(paths, d.Path)
			for _, h := range heavy {
				if d.Path == h || strings.HasPrefix(d.Path, h+"/") {
					t.Errorf("the geval guest links %s (forbidden: %s)", d.Path, h)
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
