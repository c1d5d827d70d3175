package pluginsource_test

import (
	"context"
	"crypto/rand"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugincache"
	"github.com/agentanvil/anvil/host/internal/pluginsource"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// BenchmarkPull is what resolving a locked 5 MB plugin (textcheck's size)
// costs a run before the runtime sees it: online (tag check, manifest and
// signatures from the registry, module from the cache) and offline (the
// registry down: lock and cache alone). The in-process registry is on
// loopback, so this is the host's own work, not the network's.
func BenchmarkPull(b *testing.B) {
	for _, offline := range []bool{false, true} {
		name := "online"
		if offline {
			name = "offline"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
			defer srv.Close()
			ref := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/team-a/tc:1.0"
			r, _ := oci.ParseRef(ref, true)
			module := make([]byte, 5<<20)
			_, _ = rand.Read(module)
			c := &oci.Client{}
			if _, err := c.Push(context.Background(), r, oci.Artifact{Module: module, Transport: oci.TransportWasm, Summary: summary}); err != nil {
				b.Fatal(err)
			}
			cache, _ := plugincache.Open(filepath.Join(b.TempDir(), "cache"))
			cfg := &config.Config{File: filepath.Join(b.TempDir(), "anvil.yaml"), Plugins: map[string]*config.Plugin{"tc": {Ref: ref}}}
			src := &pluginsource.Source{Client: c, Cache: cache, Logger: slog.New(slog.DiscardHandler), TagCheckTimeout: 5 * time.Second}
			l, _, err := src.Lock(context.Background(), cfg, nil, false, &trust.Policy{})
			if err != nil {
				b.Fatal(err)
			}
			if offline {
				srv.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := src.Pull(context.Background(), "tc", cfg.Plugins["tc"], l.Plugins["tc"], 64<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
