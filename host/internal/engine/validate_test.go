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

// CheckMeasures refuses a config whose similarity metric's judge has no
// embedding_model — every case of the run would fail invalid_config —
// naming the metric, its line and the missing field, with no key and
// nothing sent; a judge with the field passes, as do a geval metric and a
// metric no case has the fields for.
func TestCheckMeasuresFindsMissingEmbeddingModel(t *testing.T) {
	srv := similarityJudge(t)
	withModel := similarityConfig(srv.URL(), "")
	without := strings.Replace(withModel, "    embedding_model: text-embedding-3-small\n", "", 1)
	geval := "  - name: g\n    kind: geval\n    params: {criteria: \"Is it right?\", evaluation_steps: [\"Check it.\"], evaluation_params: [input, actual_output]}\n"
	for _, tc := range []struct {
		name, cfg, cases, want string
	}{
		{"no embedding_model", without, similarityCases, "anvil.yaml:12: metric sim: judge default (judge-model): embeddings need embedding_model"},
		{"no embedding_model, geval beside", without + geval, similarityCases, "metric sim:"},
		{"embedding_model set", withModel + geval, similarityCases, ""},
		{"no case has the fields", without, `{"id": "c1", "input": "q"}` + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg)
			writeFiles(t, e.dir, map[string]string{"cases.jsonl": tc.cases})
			cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			// No key: validate needs none.
			eng, err := engine.New(context.Background(), cfg, engine.Options{Cache: "rw", StorePath: e.store,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close(context.Background())
			err = eng.CheckMeasures(context.Background(), "")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckMeasures: %v; want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "embedding_model")):
				t.Fatalf("CheckMeasures: %v; want %q", err, tc.want)
			case tc.want != "" && strings.Contains(err.Error(), "metric g:"):
				t.Fatalf("CheckMeasures: %v; blames the geval metric", err)
			}
			if srv.Calls() != 0 {
				t.Errorf("server calls = %d; want none", srv.Calls())
			}
		})
	}
}
