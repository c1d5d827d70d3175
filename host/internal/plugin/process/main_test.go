package process

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

func TestMain(m *testing.M) {
	MaybeRunTrampoline() // this binary is the sandbox trampoline of the process plugins it starts
	flag.Parse()
	os.Exit(plugintest.Main(plugintest.Need{Native: true}, func(string) int { return m.Run() }))
}

// loadProcess starts a native guest and closes it after the test.
func loadProcess(t testing.TB, name string, opts transport.Options) transport.Plugin {
	t.Helper()
	p, err := Load(context.Background(), plugintest.NativePath(name), plugintest.NativeDigest(t), opts, nil)
	if err != nil {
		t.Fatalf("load process %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return p
}
