package wasm

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

// A guest built with this SDK imports anvil_embed only when it embeds, so
// a plugin that does not still loads on a host older than ABI 1.5; the
// host provides anvil_embed, so one that does loads here; and a host
// that lacks it refuses the module at load naming the import.
func TestEmbedImport(t *testing.T) {
	importsEmbed := func(name string) bool {
		b, err := os.ReadFile(plugintest.GuestPath(name))
		if err != nil {
			t.Fatal(err)
		}
		ims, err := moduleImports(b)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ims, func(im wasmImport) bool { return im.module == abi.HostNamespace && im.name == abi.HostEmbed })
	}
	for _, name := range []string{"textcheck", "geval", "dag", "rag", "judge"} {
		if importsEmbed(name) {
			t.Errorf("%s imports %s; a guest that does not embed must not", name, abi.HostEmbed)
		}
	}
	if !importsEmbed("similarity") {
		t.Fatalf("similarity does not import %s", abi.HostEmbed)
	}
	b, err := os.ReadFile(plugintest.GuestPath("similarity"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImports(b); err != nil {
		t.Errorf("checkImports(similarity): %v", err)
	}
	// A host of ABI 1.4 or older: its namespace has no anvil_embed.
	saved := providedImports[abi.HostNamespace]
	providedImports[abi.HostNamespace] = map[string]bool{abi.HostJudge: true, abi.HostLog: true}
	defer func() { providedImports[abi.HostNamespace] = saved }()
	err = checkImports(b)
	if err == nil || !strings.Contains(err.Error(), `module "extism:host/user" function "anvil_embed"`) {
		t.Errorf("older host: %v; want the anvil_embed import named", err)
	}
}
