package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/store"
)

// Answers replayed from a recorded judge session are not cache hits: the
// summary and the table say they were replayed.
func TestReplayedRecordingIsReportedAsReplayed(t *testing.T) {
	srv := fakeJudge(t)
	cfg := configFor(srv.URL(), true, correctness)
	e := newEnv(t, cfg)
	rec := record(t, e)
	srv.Close()

	// No key, the recording named: the run replays it.
	cfg = strings.Replace(cfg, "    api_key_env: ANVIL_TEST_KEY\n", "    api_key_env: ANVIL_TEST_NO_KEY\n    offline_recording: session.jsonl\n", 1)
	writeFiles(t, e.dir, map[string]string{"anvil.yaml": cfg, "session.jsonl": rec})
	loaded, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(context.Background(), loaded, engine.Options{
		Cache: "rw", StorePath: filepath.Join(e.dir, "fresh.db"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) string { return "" },
		// The fake judge is local, which needs no key: replay as a
		// coordinator would.
		ReplayJudges: []string{"default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	s, err := eng.Run(context.Background(), engine.RunOptions{OutputDir: filepath.Join(e.dir, "replay")})
	if err != nil {
		t.Fatal(err)
	}
	// Read as summary.json says it, which is what reports read.
	b, err := json.Marshal(s.Judge)
	if err != nil {
		t.Fatal(err)
	}
	var judge map[string]float64
	if err := json.Unmarshal(b, &judge); err != nil {
		t.Fatal(err)
	}
	if judge["requests"] == 0 || judge["replayed"] != judge["requests"] || judge["cache_hits"] != 0 || judge["calls"] != 0 {
		t.Errorf("summary judge %s; want every request replayed, none counted as a cache hit or a call", b)
	}
	var table bytes.Buffer
	if err := report.Table(&table, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), " replayed") || strings.Contains(table.String(), " cached") {
		t.Errorf("table says:\n%s\nwant the answers reported as replayed, not cached", table.String())
	}
}

// record runs e against its judge with the cache on and returns the store
// exported as a recorded judge session.
func record(t *testing.T, e env) string {
	t.Helper()
	e.run(t, "rw", engine.RunOptions{}) // fills the store
	st, err := store.Open(context.Background(), e.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rec bytes.Buffer
	if _, err := engine.ExportRecording(context.Background(), st, "recorded in a test", &rec); err != nil {
		t.Fatal(err)
	}
	return rec.String()
}
