package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestCloseWaitsForAbandonedCompile: a load whose context ends while its
// module compiles returns at once and leaves the compilation to stop by
// itself; closing the Runtime then must wait for it. A module served from
// the disk cache does not look at the context at all, so without the wait
// the compilation went on in a closed cache and crashed the process (a
// cluster worker whose run ended while it was loading the run's plugins).
func TestCloseWaitsForAbandonedCompile(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	dir := t.TempDir()
	path, digest := plugintest.GuestPath("textcheck"), plugintest.GuestDigest(t, "textcheck")
	warm, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := warm.Load(context.Background(), path, digest, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(context.Background())
	warm.Close(context.Background()) // the module is now in the disk cache
	for range 20 {
		rt, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go cancel() // while Load reads, checks or compiles the module
		if p, err := rt.Load(ctx, path, digest, transport.Options{}); err == nil {
			p.Close(context.Background())
		} else if !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("Load with an ending context: %v, want it to say the context was canceled", err)
		}
		if err := rt.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
