package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// batchRun runs e's config in batch mode (a batch per 3 scoring calls:
// the dataset's cases but c4, which has no expected_output) until ctx
// ends or the run does.
func (e env) batchRun(t *testing.T, ctx context.Context, ro engine.RunOptions) error {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{
		Cache: "rw", StorePath: e.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv,
		Batch:  &engine.BatchOptions{All: true, PollEvery: time.Millisecond, FlushAfter: time.Hour, MaxRequests: 3},
	}
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ro.OutputDir = e.out
	_, err = eng.Run(ctx, ro)
	return err
}

// TestBatchRunResumesWithoutResubmitting: a run stopped between a
// batch's creation and its end (its context cancelled, as by Ctrl-C),
// resumed, polls the batch it submitted: the server sees one create, and
// every case is scored from it.
func TestBatchRunResumesWithoutResubmitting(t *testing.T) {
	srv := fakeJudge(t)
	srv.SetBatchMode(judgetest.BatchManual)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	ctx, cancel := context.WithCancel(context.Background())
	srv.OnBatchCreate(func(string) { cancel() })
	var re *engine.RunError
	if err := e.batchRun(t, ctx, engine.RunOptions{}); !errors.As(err, &re) || re.Kind != engine.ErrInterrupted {
		t.Fatalf("first run: %v; want interrupted", err)
	}
	if n := srv.BatchCreates(); n != 1 {
		t.Fatalf("%d batches created; want 1", n)
	}
	for id := range readResults(t, e.out) {
		if id != "c4" { // c4 makes no judge call
			t.Fatalf("the stopped run wrote %s", id)
		}
	}

	// The batch completes while no run watches it; the resumed run finds
	// it in the store and reads its results.
	srv.OnBatchCreate(nil)
	if err := srv.CompleteBatch(srv.Batches()[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.batchRun(t, context.Background(), engine.RunOptions{Resume: true}); err != nil {
		t.Fatal(err)
	}
	if n := srv.BatchCreates(); n != 1 {
		t.Errorf("%d batches created after the resume; want 1", n)
	}
	got := readResults(t, e.out)
	if len(got) != 4 {
		t.Fatalf("%d cases written; want 4", len(got))
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		if m := got[id].Metrics[0]; m.Score == nil {
			t.Errorf("%s: %+v", id, m)
		}
	}
	if s := got["c2"].Metrics[0].Score; s == nil || *s > 0.5 {
		t.Errorf("c2 scored %v; want the Sydney reply's 0.21", s)
	}
}

// TestBatchedWasmKindOutwaitsItsTimeout: a Wasm kind whose judge calls
// wait on a batch for several times its limits.timeout is scored. The
// limit counts the guest's own time, not its waits on the judge; before,
// every case of a batched run with a plugin kind was a plugin timeout,
// since a real batch takes minutes to hours.
func TestBatchedWasmKindOutwaitsItsTimeout(t *testing.T) {
	testkit.Long(t, "builds the G-Eval plugin for wasip1")
	const timeout = 500 * time.Millisecond
	wasm, digest := buildWasm(t, "geval", "../../../plugins/geval/wasm")
	srv := fakeJudge(t)
	srv.SetBatchMode(judgetest.BatchManual)
	created := make(chan string, 1)
	srv.OnBatchCreate(func(id string) { created <- id })
	e := newEnv(t, configFor(srv.URL(), true, correctness)+fmt.Sprintf(
		"plugins:\n  geval: {path: %s, sha256: %s, grants: {judge: true}, limits: {timeout: %s}}\n", wasm, digest, timeout))
	done := make(chan error, 1)
	go func() { done <- e.batchRun(t, context.Background(), engine.RunOptions{}) }()
	var id string
	select {
	case id = <-created:
	case err := <-done:
		t.Fatalf("the run ended before submitting a batch: %v", err)
	}
	// The batch takes several times the kind's limit to end.
	<-time.After(4 * timeout)
	if err := srv.CompleteBatch(id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := readResults(t, e.out)
	for _, id := range []string{"c1", "c2", "c3"} {
		m := got[id].Metrics[0]
		if m.Score == nil || m.Error != nil {
			t.Errorf("%s: score %v, error %+v; want a score", id, m.Score, m.Error)
		}
	}
}
