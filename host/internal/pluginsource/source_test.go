package pluginsource_test

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/lockfile"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugincache"
	"github.com/agentanvil/anvil/host/internal/pluginsource"
	"github.com/agentanvil/anvil/host/internal/trust"
)

type fixture struct {
	srv    *httptest.Server
	client *oci.Client
	ref    string
	cfg    *config.Config
	cache  *plugincache.Cache
	dir    string
}

var summary = oci.Summary{Name: "tc", Version: "1.0.0", ABI: "1.1", Kinds: []string{"metric/exact_match"}, Capabilities: []string{}}

func setup(t *testing.T) *fixture {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv, client: &oci.Client{}, dir: t.TempDir()}
	f.ref = "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/team-a/tc:1.0"
	f.push(t, "module v1")
	var err error
	f.cache, err = plugincache.Open(filepath.Join(f.dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = &config.Config{File: filepath.Join(f.dir, "anvil.yaml"), Dir: f.dir,
		Plugins: map[string]*config.Plugin{"tc": {Ref: f.ref}}}
	return f
}

func (f *fixture) push(t *testing.T, module string) string {
	t.Helper()
	r, _ := oci.ParseRef(f.ref, true)
	d, err := f.client.Push(context.Background(), r, oci.Artifact{Module: []byte(module), Transport: oci.TransportWasm, Summary: summary})
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest.String()
}

func (f *fixture) source() *pluginsource.Source {
	return &pluginsource.Source{Client: f.client, Cache: f.cache, Logger: slog.New(slog.DiscardHandler), TagCheckTimeout: 5 * time.Second}
}

func (f *fixture) lock(t *testing.T, old *lockfile.Lock, update bool) (*lockfile.Lock, error) {
	t.Helper()
	l, _, err := f.source().Lock(context.Background(), f.cfg, old, update, &trust.Policy{})
	return l, err
}

func TestLockThenPull(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := f.lock(t, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	e := l.Plugins["tc"]
	if e == nil || e.Signer != "unsigned" || e.Module.MediaType != oci.WasmLayer || e.ABI != "1.1" {
		t.Fatalf("lock entry %+v", e)
	}
	res, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], e, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(res.Path)
	if err != nil || string(b) != "module v1" || res.ModuleDigest != e.Module.Digest || res.Subject != e.Digest {
		t.Errorf("resolved %+v: %q, %v", res, b, err)
	}
}

func TestMovedTag(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := f.lock(t, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	old := l.Plugins["tc"].Digest
	moved := f.push(t, "module v2")
	_, err = f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20)
	var me *pluginsource.MovedError
	if !errors.As(err, &me) || me.Locked != old || me.Now != moved || !strings.Contains(err.Error(), "lock --update") {
		t.Errorf("run after the tag moved: %v", err)
	}
	if _, err := f.lock(t, l, false); !errors.As(err, &me) {
		t.Errorf("lock after the tag moved: %v", err)
	}
	updated, err := f.lock(t, l, true)
	if err != nil || updated.Plugins["tc"].Digest != moved {
		t.Errorf("lock --update: %v", err)
	}
}

func TestOffline(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := f.lock(t, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	// Warm: the lock and the cache suffice.
	res, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20)
	if err != nil || res.ModuleDigest != l.Plugins["tc"].Module.Digest {
		t.Errorf("warm cache, registry down: %+v, %v", res, err)
	}
	// Cold: a clear error, nothing resolved.
	cold, _ := plugincache.Open(filepath.Join(f.dir, "cold"))
	s := f.source()
	s.Cache = cold
	_, err = s.Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20)
	if err == nil || !strings.Contains(err.Error(), "is not in the plugin cache") || !strings.Contains(err.Error(), "cannot be reached") {
		t.Errorf("cold cache, registry down: %v", err)
	}
}

// TestHandEditedLock: every field the lock states is checked against the
// manifest it pins.
func TestHandEditedLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := f.lock(t, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(e *lockfile.Entry)
		want string
	}{
		{"module digest", func(e *lockfile.Entry) { e.Module.Digest = "sha256:" + strings.Repeat("0", 64) }, "module.digest is sha256:000"},
		{"module size", func(e *lockfile.Entry) { e.Module.Size++ }, "module.size"},
		{"capabilities", func(e *lockfile.Entry) { e.Capabilities = []string{"judge"} }, "capabilities is [judge]"},
		{"kinds", func(e *lockfile.Entry) { e.Kinds = nil }, "kinds is []"},
		{"abi", func(e *lockfile.Entry) { e.ABI = "1.0" }, "abi is 1.0"},
		{"transport", func(e *lockfile.Entry) { e.Transport = "process" }, "transport is process"},
		{"manifest digest", func(e *lockfile.Entry) { e.Digest = "sha256:" + strings.Repeat("0", 64) }, "moved"},
		{"ref", func(e *lockfile.Entry) { e.Ref += "x" }, "but the config now says"},
	} {
		e := *l.Plugins["tc"]
		c.edit(&e)
		_, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], &e, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], nil, 1<<20); err == nil || !strings.Contains(err.Error(), "run `anvil-host lock`") {
		t.Errorf("not in the lock: %v", err)
	}
}

func TestPolicyFromConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := trust.GenerateKeyPair(filepath.Join(dir, "team-a")); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{File: filepath.Join(dir, "anvil.yaml"), Dir: dir, Trust: config.Trust{RequireSignatures: true,
		Publishers: map[string]*config.Publisher{"team-a": {Key: "team-a.pub", Capabilities: []string{"judge"}}}}}
	p, err := pluginsource.Policy(cfg)
	if err != nil || !p.RequireAll || len(p.Publishers) != 1 || p.Publishers[0].Capabilities[0] != "judge" {
		t.Fatalf("%+v, %v", p, err)
	}
	cfg.Trust.Publishers["team-a"].Key = "missing.pub"
	if _, err := pluginsource.Policy(cfg); err == nil || !strings.Contains(err.Error(), "trust.publishers.team-a") {
		t.Errorf("a missing key file: %v", err)
	}
}

// TestDigestReference: a reference pinned by digest needs no tag check; it
// still must be in the lock, and it runs offline from the cache.
func TestDigestReference(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, _ := oci.ParseRef(f.ref, true)
	d, err := f.client.Resolve(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Plugins["tc"].Ref = "oci://" + r.Registry + "/" + r.Repository + "@" + d.Digest.String()
	l, err := f.lock(t, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.Plugins["tc"].Digest != d.Digest.String() {
		t.Fatalf("locked %s, want %s", l.Plugins["tc"].Digest, d.Digest)
	}
	f.push(t, "module v2") // moves the tag, not the digest
	if _, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20); err != nil {
		t.Errorf("online: %v", err)
	}
	f.srv.Close()
	if _, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20); err != nil {
		t.Errorf("offline, warm: %v", err)
	}
	cold, _ := plugincache.Open(filepath.Join(f.dir, "cold"))
	s := f.source()
	s.Cache = cold
	if _, err := s.Pull(context.Background(), "tc", f.cfg.Plugins["tc"], l.Plugins["tc"], 1<<20); err == nil || !strings.Contains(err.Error(), "is not in the plugin cache") {
		t.Errorf("offline, cold: %v", err)
	}
	e := *l.Plugins["tc"]
	e.Digest = "sha256:" + strings.Repeat("0", 64)
	if _, err := f.source().Pull(context.Background(), "tc", f.cfg.Plugins["tc"], &e, 1<<20); err == nil || !strings.Contains(err.Error(), "edited by hand") {
		t.Errorf("a lock that pins another digest than the reference names: %v", err)
	}
}
