package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// Without a key, a run replays the judge's offline_recording; estimate
// prices the calls the configured judge would make (what setting the key
// costs), not the recording's free answers.
func TestEstimateWithoutAKeyPricesTheJudgeNotItsRecording(t *testing.T) {
	srv := fakeJudge(t)
	cfg := configFor(srv.URL(), true, correctness)
	e := newEnv(t, cfg)
	rec := record(t, e)
	cfg = strings.Replace(cfg, srv.URL(), "https://judge.example/v1", 1)
	cfg = strings.Replace(cfg, "    api_key_env: ANVIL_TEST_KEY\n", "    api_key_env: ANVIL_TEST_KEY\n    offline_recording: session.jsonl\n", 1)
	writeFiles(t, e.dir, map[string]string{"anvil.yaml": cfg, "session.jsonl": rec})
	var priced []*engine.Estimate
	for _, cache := range []string{"", "off"} {
		cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(context.Background(), cfg, engine.Options{Cache: cache, StorePath: filepath.Join(e.dir, "fresh.db"),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := eng.Estimate(context.Background(), "", 0)
		eng.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Metrics[0]
		// 1 steps call and 3 scoring calls (c4 has no expected_output).
		if m.JudgeCalls != 4 || m.CachedCalls != 0 || m.InputTokens == 0 || m.USD <= 0 {
			t.Errorf("--cache %q: estimate %+v; want 4 priced calls, none cached", cache, *m)
		}
		priced = append(priced, m)
	}
	if len(priced) == 2 && *priced[0] != *priced[1] {
		t.Errorf("estimate with the cache on %+v and off %+v; want the same (the recording is no cache)", *priced[0], *priced[1])
	}
}
