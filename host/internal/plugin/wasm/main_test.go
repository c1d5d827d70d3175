package wasm

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// testRT is shared by the tests, as a process would share it.
var testRT *Runtime

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(plugintest.Main(plugintest.Need{Wasm: true}, func(cacheDir string) int {
		ctx := context.Background()
		rt, err := NewRuntime(ctx, RuntimeOptions{CacheDir: cacheDir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		testRT = rt
		defer rt.Close(ctx)
		return m.Run()
	}))
}

// load loads a guest through the shared runtime and closes it after the test.
func load(t testing.TB, name string, opts transport.Options) transport.Plugin {
	t.Helper()
	p, err := testRT.Load(context.Background(), plugintest.GuestPath(name), plugintest.GuestDigest(t, name), opts)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return p
}
