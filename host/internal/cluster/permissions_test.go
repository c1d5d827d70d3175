package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// nkeyUser is a NATS user identity: its public key, and its seed in a file
// (what --nkey takes).
type nkeyUser struct {
	public, seedFile string
}

func newNKeyUser(t *testing.T, name string) nkeyUser {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f := filepath.Join(t.TempDir(), name+".nk")
	if err := os.WriteFile(f, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return nkeyUser{public: pub, seedFile: f}
}

// startShippedNATS starts nats-server in process with
// examples/cluster/nats-server.conf, parsed as the binary parses it, on a
// random loopback port, with the coordinator's and the worker's public
// keys from the environment as the file says, and extra users added to
// the ANVIL account without permissions of their own.
func startShippedNATS(t *testing.T, coordinator, worker nkeyUser, extra ...nkeyUser) *server.Server {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "cluster", "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(conf)
	for _, u := range extra {
		const users = "    users: [\n"
		if !strings.Contains(text, users) {
			t.Fatal("the shipped config has no users list to add a user to")
		}
		text = strings.Replace(text, users, users+"      { nkey: "+u.public+" }\n", 1)
	}
	path := filepath.Join(t.TempDir(), "nats-server.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ANVIL_NATS_COORDINATOR_NKEY", coordinator.public)
	t.Setenv("ANVIL_NATS_WORKER_NKEY", worker.public)
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.StoreDir = "127.0.0.1", -1, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// natsErrors is a slog handler keeping the NATS errors a process logs (a
// permissions violation arrives as one).
type natsErrors struct {
	mu   sync.Mutex
	errs []string
}

func (n *natsErrors) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (n *natsErrors) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" && strings.Contains(strings.ToLower(a.Value.String()), "permissions violation") {
			n.mu.Lock()
			n.errs = append(n.errs, r.Message+": "+a.Value.String())
			n.mu.Unlock()
		}
		return true
	})
	return nil
}
func (n *natsErrors) WithAttrs([]slog.Attr) slog.Handler { return n }
func (n *natsErrors) WithGroup(string) slog.Handler      { return n }
func (n *natsErrors) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.errs...)
}

// TestShippedPermissionsStopARoguePeer: with examples/cluster/nats-server.conf
// the coordinator and a worker, each with its own nkey, run a project
// without one permissions violation, and score as a local run does. A peer
// without credentials is not let in; a peer in the same account without a
// role's credentials has every message refused by the server — a forged
// passing result, the case published again, a forged run description, a
// purge of the results, a subscription to the cases; and a worker's
// credentials do not let it publish a run description (whose judge
// endpoint would receive every worker's API key) nor the coordinator's
// publish a result.
func TestShippedPermissionsStopARoguePeer(t *testing.T) {
	coordinator, worker, rogue := newNKeyUser(t, "coordinator"), newNKeyUser(t, "worker"), newNKeyUser(t, "rogue")
	ns := startShippedNATS(t, coordinator, worker, rogue)
	url := ns.ClientURL()

	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 4, true) // a plugin: the object store too
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (2)"), g.hold(agrees))
	t.Cleanup(g.open)

	// The coordinator first: it creates the streams, which workers may
	// only read.
	coordErrs, workerErrs := &natsErrors{}, &natsErrors{}
	clog, wlog := slog.New(coordErrs), slog.New(workerErrs)
	co, err := NewCoordinator(context.Background(), CoordinatorOptions{URL: url, Auth: Auth{NKeyFile: coordinator.seedFile}, Logger: clog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	workers(t, url, 1, WorkerOptions{Auth: Auth{NKeyFile: worker.seedFile}, Logger: wlog})
	eopts := engine.Options{Cache: "rw"}
	co.EngineOptions(&eopts)
	eng := openEngine(t, dir, eopts)
	out := filepath.Join(dir, "cluster")
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := co.Run(context.Background(), eng, engine.RunOptions{OutputDir: out})
		done <- outcome{s, err}
	}()
	g.wait(t, 1) // the run is under way: case-002 is with the judge
	runID, err := runName(out)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := nats.Connect(url); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("a peer without credentials connected: %v", err)
	}

	// What each peer tries; every one must be refused by the server.
	forgedPass := fmt.Sprintf(`{"run_id":%q,"worker":"w0","abi_major":%d,"abi_minor":%d,"result":{"case_id":"case-003","metrics":[{"metric":"correctness","status":"passed","score":1}]}}`,
		runID, abi.Major, abi.Minor)
	type attempt struct {
		who     nkeyUser
		publish string // else subscribe
		sub     string
	}
	attempts := []attempt{
		{rogue, resultsSubject(runID), ""},
		{rogue, casesSubject(runID), ""},
		{rogue, "$KV." + runsBucket + "." + runID, ""},
		{rogue, "$JS.API.STREAM.PURGE." + resultsStream, ""},
		{rogue, "", "anvil.cases.>"},
		{worker, "$KV." + runsBucket + "." + runID, ""},
		{worker, "$JS.API.STREAM.UPDATE." + "KV_" + runsBucket, ""},
		{worker, "$JS.API.STREAM.CREATE.EVIL", ""},
		{coordinator, resultsSubject(runID), ""},
	}
	for _, a := range attempts {
		refused := make(chan error, 4)
		opt, err := nats.NkeyOptionFromSeed(a.who.seedFile)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
		if err != nil {
			t.Fatalf("%s: connect: %v", a.who.public[:8], err)
		}
		subject := a.publish
		if subject != "" {
			err = nc.Publish(subject, []byte(forgedPass))
		} else {
			subject = a.sub
			_, err = nc.SubscribeSync(subject)
		}
		if err == nil {
			err = nc.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-refused:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), subject) {
				t.Errorf("%s on %s: %v, want a permissions violation", a.who.public[:8], subject, err)
			}
		case <-time.After(time.Minute):
			t.Errorf("%s on %s: the server did not refuse it", a.who.public[:8], subject)
		}
		nc.Close()
	}

	g.open()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if err := report.Write(out, res.s); err != nil {
		t.Fatal(err)
	}
	if l, c := comparableSummary(t, localOut), comparableSummary(t, out); l != c {
		t.Errorf("summaries differ\nlocal:\n%s\ncluster:\n%s", l, c)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, out)
	for id, line := range local {
		if cluster[id] != line {
			t.Errorf("case %s:\nlocal   %s\ncluster %s", id, line, cluster[id])
		}
	}
	// Run again into the same directory: clearing the earlier run,
	// plugins already stored, message ids JetStream remembers.
	co2, err := NewCoordinator(context.Background(), CoordinatorOptions{URL: url, Auth: Auth{NKeyFile: coordinator.seedFile}, Logger: clog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co2.Close)
	eopts = engine.Options{Cache: "rw"}
	co2.EngineOptions(&eopts)
	if s, err := co2.Run(context.Background(), openEngine(t, dir, eopts), engine.RunOptions{OutputDir: out}); err != nil || s.Cases != 4 {
		t.Fatalf("rerun: %v", err)
	}
	if errs := append(coordErrs.list(), workerErrs.list()...); len(errs) > 0 {
		t.Errorf("the shipped permissions refused what the coordinator or the worker does:\n%s", strings.Join(errs, "\n"))
	}
}
