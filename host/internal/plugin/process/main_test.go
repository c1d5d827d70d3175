package process

import (
	"context"
	"os"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

func TestMain(m *testing.M) {
	MaybeRunTrampoline() // this binary is the sandbox trampoline of the process plugins it starts
	os.Exit(plugintest.Main(m, plugintest.Need{Native: true}))
}

// loadProcess starts a native guest and closes it after the test.
func loadProcess(t testing.TB, name string, opts transport.Options) transport.Plugin {
	t.Helper()
	p, err := Load(context.Background(), plugintest.NativePath(name), plugintest.NativeDigest(t), opts, nil)
	return plugintest.Loaded(t, "process "+name, p, err)
}
