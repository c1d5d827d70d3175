package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestNKeyAuthFromFileOrEnv: a server that requires an nkey admits a
// process given the seed file by flag or by $NATS_NKEY, and refuses one
// without it with the server's reason.
func TestNKeyAuthFromFileOrEnv(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	t.Cleanup(s.Shutdown)
	ctx := context.Background()
	log := quietLogger(t)

	c, err := dial(ctx, s.ClientURL(), Auth{NKeyFile: seedFile}, "t", log)
	if err != nil {
		t.Fatalf("with --nkey: %v", err)
	}
	c.close()

	t.Setenv("NATS_NKEY", seedFile)
	c, err = dial(ctx, s.ClientURL(), Auth{}, "t", log)
	if err != nil {
		t.Fatalf("with $NATS_NKEY: %v", err)
	}
	c.close()

	t.Setenv("NATS_NKEY", "")
	_, err = dial(ctx, s.ClientURL(), Auth{}, "t", log)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("without credentials: err = %v, want an authorization error", err)
	}
}

// TestAPIKeyNeverTravelsThroughNATS: everything published on the server
// during a cluster run — the run description, plugins, cases, results,
// permits, cache entries — is watched; the judge API key is in none of it
// (every worker reads its own environment).
func TestAPIKeyNeverTravelsThroughNATS(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 8, false)
	ns := startNATS(t, t.TempDir(), -1)
	spy, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	var mu sync.Mutex
	var seen, leaked int
	key := []byte(enginetest.Getenv(enginetest.KeyEnv))
	if _, err := spy.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if bytes.Contains(m.Data, key) {
			leaked++
			t.Errorf("the API key travelled on %s", m.Subject)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	workers(t, ns.ClientURL(), 2, WorkerOptions{})
	if _, _, err := runCluster(t, dir, filepath.Join(dir, "out"), ns.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{Cache: "rw"}); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen < 8*2 {
		t.Errorf("the spy saw %d messages; it did not watch the run", seen)
	}
}

// TestPoisonedPluginObject: bytes under a plugin's digest in the object
// store that are not that plugin are replaced by the coordinator, and a
// worker that fetched other bytes than the digest refuses the run.
func TestPoisonedPluginObject(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 4, true)
	ns := startNATS(t, t.TempDir(), -1)
	ctx := context.Background()
	c, err := dial(ctx, ns.ClientURL(), Auth{}, "attacker", quietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	digest := openEngine(t, dir, engine.Options{}).PluginDigests()["textcheck"]
	if _, err := c.plugins.PutBytes(ctx, digest, []byte("\x00asm not the plugin")); err != nil {
		t.Fatal(err)
	}
	// A worker handed the poisoned object refuses it.
	w := &Worker{opts: WorkerOptions{Name: "w"}, log: quietLogger(t), c: c, stamp: ownStamp()}
	if _, err := w.fetch(ctx, t.TempDir(), "plugin textcheck", digest, maxPlugin); err == nil || !strings.Contains(err.Error(), "refusing them") {
		t.Fatalf("fetchPlugin of poisoned bytes: %v", err)
	}
	// The coordinator replaces them, and the run goes through.
	workers(t, ns.ClientURL(), 1, WorkerOptions{})
	s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), ns.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != 4 || s.PluginErrors != 0 {
		t.Errorf("%d cases, %d plugin errors; want 4 and 0", s.Cases, s.PluginErrors)
	}
}
