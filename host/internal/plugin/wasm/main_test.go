package wasm

import (
	"context"
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// testRT is shared by the tests, as a process would share it.
var testRT *Runtime

func TestMain(m *testing.M) {
	os.Exit(plugintest.MainRuntime(m, plugintest.Need{Wasm: true}, &testRT, func(ctx context.Context, cacheDir string) (*Runtime, error) {
		return NewRuntime(ctx, RuntimeOptions{CacheDir: cacheDir})
	}))
}

// load loads a guest through the shared runtime and closes it after the test.
func load(t testing.TB, name string, opts transport.Options) transport.Plugin {
	t.Helper()
	p, err := testRT.Load(context.Background(), plugintest.GuestPath(name), plugintest.GuestDigest(t, name), opts)
	return plugintest.Loaded(t, name, p, err)
}
