package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// similarityVectors are the fake server's embeddings: cosines by hand.
var similarityVectors = map[string][]float64{
	"Paris.":   {1, 0},
	"Paris":    {1, 1}, // cos(Paris., Paris) = 1/√2
	"Sydney.":  {0, 1},
	"Canberra": {1, 0}, // cos = 0
	"hot":      {-1, 0},
	"cold":     {1, 0}, // cos = -1: scored 0
	"12":       {3, 4}, // identical texts: cos 1, one text embedded
}

func similarityJudge(t *testing.T) *judgetest.Server {
	t.Helper()
	return judgetest.New(t, judgetest.WithEmbeddings(func(_, text string) []float64 {
		if v, ok := similarityVectors[text]; ok {
			return v
		}
		t.Errorf("the server was asked to embed %q", text)
		return []float64{1, 1}
	}))
}

const similarityCases = `{"id": "c1", "input": "q", "actual_output": "Paris.", "expected_output": "Paris"}
{"id": "c2", "input": "q", "actual_output": "Sydney.", "expected_output": "Canberra"}
{"id": "c3", "input": "q", "actual_output": "12", "expected_output": "12"}
{"id": "c4", "input": "q", "actual_output": "hot", "expected_output": "cold"}
`

const similarityMetric = `  - name: sim
    kind: similarity
    threshold: 0.5
`

func similarityConfig(url, extra string) string {
	return fmt.Sprintf(`version: 1
dataset: cases.jsonl
judges:
  default:
    base_url: %s
    model: judge-model
    embedding_model: text-embedding-3-small
    api_key_env: ANVIL_TEST_KEY
    price: {input_per_million: 1, output_per_million: 2, embedding_per_million: 1000}
defaults:
  judge: default
metrics:
%s%s`, url, similarityMetric, extra)
}

// The similarity kind through the engine and the fake OpenAI server's
// embeddings endpoint: the scores are the hand-computed cosines, clipped
// at 0; each case is one embeddings call (a case whose two texts are the
// same sends one text); a second run answers every case from the cache
// and calls nothing; estimate counts what the cold run called, then
// nothing.
func TestSimilarityThroughEmbeddings(t *testing.T) {
	srv := similarityJudge(t)
	e := newEnv(t, similarityConfig(srv.URL(), ""))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": similarityCases})

	if rep := estimateIn(t, e, "rw"); rep.Total.JudgeCalls != 4 || rep.Total.CachedCalls != 0 || srv.Calls() != 0 {
		t.Fatalf("cold estimate: %+v, server calls %d; want 4 calls, nothing sent", rep.Total, srv.Calls())
	}
	s := e.run(t, "rw", engine.RunOptions{})
	if srv.Calls() != 4 {
		t.Fatalf("server calls = %d; want one embeddings call per case", srv.Calls())
	}
	var inputs []string
	for _, r := range srv.Requests() {
		if !r.Embedding {
			t.Fatalf("a non-embeddings request: %+v", r)
		}
		inputs = append(inputs, strings.Join(r.Inputs, "|"))
	}
	if got := strings.Join(slices.Sorted(slices.Values(inputs)), " "); got != "12 Paris.|Paris Sydney.|Canberra hot|cold" {
		t.Errorf("embedded %q", got)
	}
	want := map[string]float64{"c1": 1 / math.Sqrt2, "c2": 0, "c3": 1, "c4": 0}
	res := readResults(t, e.out)
	for id, w := range want {
		r := res[id].Metrics[0]
		if r.Score == nil || math.Abs(*r.Score-w) > 1e-12 || r.Error != nil {
			t.Errorf("%s: score %v error %+v; want %v", id, r.Score, r.Error, w)
		}
	}
	if r := res["c4"].Metrics[0]; !strings.Contains(r.Reason, "-1") || !strings.Contains(r.Reason, "scored 0") {
		t.Errorf("c4 reason %q; want the negative cosine named", r.Reason)
	}
	if r := res["c1"].Metrics[0]; !strings.Contains(r.Reason, "0.7071") || r.Status != "passed" {
		t.Errorf("c1: %+v; want a pass naming cosine 0.7071", r)
	}
	m := s.Metrics[0]
	if m.Judge.Calls != 4 || m.Judge.CacheHits != 0 || m.Passed != 2 {
		t.Errorf("first run: %+v, usage %+v; want 4 calls, 2 passed", m, m.Judge)
	}

	again := e.run(t, "rw", engine.RunOptions{OutputDir: t.TempDir()})
	if srv.Calls() != 4 {
		t.Errorf("server calls after the cached run = %d; want still 4", srv.Calls())
	}
	if m := again.Metrics[0]; m.Judge.Calls != 0 || m.Judge.CacheHits != 4 || m.Passed != 2 {
		t.Errorf("cached run: usage %+v, passed %d; want 0 calls, 4 cache hits, 2 passed", m.Judge, m.Passed)
	}
	if rep := estimateIn(t, e, "rw"); rep.Total.JudgeCalls != 0 || rep.Total.CachedCalls != 4 {
		t.Errorf("warm estimate: %+v; want 0 calls, 4 cached", rep.Total)
	}
}

// The similarity Wasm module, configured over the built-in kind with a
// judge-token budget its texts' estimate exceeds: every case is refused
// budget_exhausted by the guard, and nothing reaches the server. With the
// default budget the module scores what the built-in kind scores.
func TestSimilarityWasmBudget(t *testing.T) {
	testkit.Long(t, "builds a Wasm module")
	wasm, digest := buildWasm(t, "similarity", "../../../plugins/similarity/wasm")
	srv := similarityJudge(t)
	plugins := func(limits string) string {
		return fmt.Sprintf("plugins:\n  similarity: {path: %s, sha256: %s, grants: {judge: true}%s}\n", wasm, digest, limits)
	}
	e := newEnv(t, similarityConfig(srv.URL(), plugins(", limits: {max_judge_tokens: 1}")))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": similarityCases})
	e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 0 {
		t.Fatalf("server calls = %d; want none over budget", srv.Calls())
	}
	for id, c := range readResults(t, e.out) {
		r := c.Metrics[0]
		if r.Error == nil || r.Error.Code != abi.CodeBudget || !strings.Contains(r.Error.Message, "max_judge_tokens 1") {
			t.Errorf("%s: %+v; want budget_exhausted naming max_judge_tokens", id, r.Error)
		}
	}

	e = newEnv(t, similarityConfig(srv.URL(), plugins("")))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": similarityCases})
	e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 4 {
		t.Errorf("server calls = %d; want 4", srv.Calls())
	}
	if r := readResults(t, e.out)["c1"].Metrics[0]; r.Score == nil || math.Abs(*r.Score-1/math.Sqrt2) > 1e-12 {
		t.Errorf("c1 over Wasm: %+v", r)
	}
}

// estimateIn estimates e's config with the given cache mode.
func estimateIn(t *testing.T, e env, cache string) *engine.EstimateReport {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{Cache: cache, StorePath: e.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv}
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	rep, err := eng.Estimate(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
