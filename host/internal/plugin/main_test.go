package plugin

import (
	"context"
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

// testRT is shared by the tests, as a process would share it.
var testRT *Runtime

func TestMain(m *testing.M) {
	MaybeRunTrampoline() // this binary is the sandbox trampoline of the process plugins it starts
	os.Exit(plugintest.MainRuntime(m, plugintest.Need{Wasm: true, Native: true}, &testRT, func(ctx context.Context, cacheDir string) (*Runtime, error) {
		return NewRuntime(ctx, RuntimeOptions{CacheDir: cacheDir})
	}))
}

// loadProcess starts a native guest through the shared runtime and closes
// it after the test.
func loadProcess(t testing.TB, name string, opts Options) Plugin {
	t.Helper()
	p, err := testRT.LoadProcess(context.Background(), plugintest.NativePath(name), plugintest.NativeDigest(t), opts)
	return plugintest.Loaded(t, "process "+name, p, err)
}

// load loads a guest through the shared runtime and closes it after the test.
func load(t testing.TB, name string, opts Options) Plugin {
	t.Helper()
	p, err := testRT.Load(context.Background(), plugintest.GuestPath(name), plugintest.GuestDigest(t, name), opts)
	return plugintest.Loaded(t, name, p, err)
}
