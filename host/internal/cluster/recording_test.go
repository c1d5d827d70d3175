package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestOfflineRecordingTravels: examples/quickstart without a judge key
// replays judge-session.jsonl. On a cluster the recording's bytes travel
// by digest with the run, so the workers replay the same answers and the
// summary equals the local run's (apart from run id and timings). A
// worker that has a key for the judge replays too: it must score as its
// coordinator does, not call the real judge.
func TestOfflineRecordingTravels(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "bin", "wasm", "textcheck.wasm")); err != nil {
		t.Skip("bin/wasm/textcheck.wasm not built: run scripts/build-plugins textcheck")
	}
	cfgFile := filepath.Join(root, "examples", "quickstart", "anvil.yaml")
	noKey := func(string) string { return "" }
	tmp := t.TempDir()

	localOut := filepath.Join(tmp, "local")
	local := openConfig(t, cfgFile, filepath.Join(tmp, "local.db"), engine.Options{Getenv: noKey, Cache: "rw"})
	if len(local.RecordedJudges()) != 1 {
		t.Fatalf("the quickstart without a key replays %v; want the default judge", local.RecordedJudges())
	}
	ls, err := local.Run(context.Background(), engine.RunOptions{OutputDir: localOut})
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Write(localOut, ls); err != nil {
		t.Fatal(err)
	}

	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 2, WorkerOptions{}) // enginetest.Getenv: no OPENAI_API_KEY
	// A worker that refuses the run ends it (rather than the run waiting
	// for a worker that can evaluate it).
	ctx, refused := context.WithCancelCause(context.Background())
	defer refused(nil)
	co, err := NewCoordinator(ctx, CoordinatorOptions{URL: nats.ClientURL(), Logger: quietLogger(t),
		OnFault: func(f FaultMessage) { refused(fmt.Errorf("worker %s refused the run: %s", f.Worker, f.Reason)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	eopts := engine.Options{Getenv: noKey, Cache: "rw"}
	co.EngineOptions(&eopts)
	eng := openConfig(t, cfgFile, filepath.Join(tmp, "cluster.db"), eopts)
	out := filepath.Join(tmp, "cluster")
	s, err := co.Run(ctx, eng, engine.RunOptions{OutputDir: out})
	if err != nil {
		t.Fatal(err, context.Cause(ctx))
	}
	if err := report.Write(out, s); err != nil {
		t.Fatal(err)
	}
	if s.Cases != ls.Cases || s.Cases == 0 {
		t.Fatalf("cluster run: %d cases, local %d", s.Cases, ls.Cases)
	}
	if l, c := comparableSummary(t, localOut), comparableSummary(t, out); l != c {
		t.Errorf("summaries differ\nlocal:\n%s\ncluster:\n%s", l, c)
	}
	if got := len(co.Refusals()); got != 0 {
		t.Errorf("workers refused the run: %+v", co.Refusals())
	}

	// The run's description (kept by the coordinator) opened by a worker
	// that has the judge's key and another judge URL: it replays the same
	// recording.
	c, err := dial(context.Background(), nats.ClientURL(), Auth{}, "keyed", quietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	keyed := &Worker{c: c, log: quietLogger(t), stamp: ownStamp(), opts: WorkerOptions{Name: "keyed", CompileCacheDir: compileCache(t),
		Getenv: func(k string) string {
			switch k {
			case "OPENAI_API_KEY":
				return "sk-unused"
			case "OPENAI_BASE_URL": // a local server needs no key: still replayed
				return "http://127.0.0.1:9/v1"
			}
			return ""
		}}}
	weng, cleanup, err := keyed.openRun(context.Background(), &co.desc)
	if err != nil {
		t.Fatalf("a worker with the key refuses the run: %v", err)
	}
	defer cleanup()
	if got, want := weng.RecordedJudges(), co.desc.Recordings; !mapsEqual(got, want) || len(want) != 1 {
		t.Errorf("the keyed worker replays %v; the coordinator %v", got, want)
	}
}
