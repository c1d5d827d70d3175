package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// A run stopped while its batch is being created leaves the batch running
// (recorded, for --resume to collect) and says so, naming the batch, so
// whoever will not resume can cancel it; the batch is not cancelled.
func TestBatchLeftRunningIsNamed(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.SetBatchMode(judgetest.BatchManual)
			ctx, cancel := context.WithCancel(context.Background())
			srv.OnBatchCreate(func(string) { cancel() })
			h := batchJudgeOn(t, fl, srv, 2, &memState{}, false)
			doAll(ctx, h.judge, prompts(2))
			h.judge.WaitSubmitted()
			id := srv.Batches()[0].ID
			logs := h.logs.String()
			if strings.Count(logs, "judge batch left running") != 1 || !strings.Contains(logs, "batch="+id) || !strings.Contains(logs, "run --resume collects") {
				t.Errorf("logs:\n%s\nwant one line naming batch %s left running", logs, id)
			}
			if st := srv.Batches()[0].Status; st != "in_progress" {
				t.Errorf("batch status %q; want in_progress (not cancelled)", st)
			}
		})
	}
}

// The last caller of a batch being polled giving up names the batch as
// left running; one giving up while another still waits does not.
func TestBatchLastWaiterGoneNamesBatch(t *testing.T) {
	srv := judgetest.New(t)
	h := batchJudge(t, srv, 2, nil, false)
	b := h.judge.batcher
	w1, w2 := &batchWaiter{id: "a-0"}, &batchWaiter{id: "b-0"}
	b.mu.Lock()
	b.waiting["batch_x"] = map[string][]*batchWaiter{"a-0": {w1}, "b-0": {w2}}
	b.mu.Unlock()
	b.drop(w1)
	if strings.Contains(h.logs.String(), "left running") {
		t.Fatalf("named while a caller still waits:\n%s", h.logs.String())
	}
	b.drop(w2)
	if logs := h.logs.String(); !strings.Contains(logs, "judge batch left running") || !strings.Contains(logs, "batch=batch_x") {
		t.Errorf("logs:\n%s\nwant batch_x named left running", logs)
	}
}

// A batch the provider would not run (failed: over the organisation's
// enqueued-token limit) fails its requests with the provider's reason and
// what to do, and does not send them again at once (they would fail the
// same way).
func TestBatchFailedNamesItsReason(t *testing.T) {
	for _, fl := range batchFlavours[:2] { // Anthropic has no failed batches
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.SetBatchMode(judgetest.BatchManual)
			created := createdCh(srv)
			h := batchJudgeOn(t, fl, srv, 2, nil, false)
			done := make(chan []abi.JudgeResponse)
			go func() { done <- doAll(context.Background(), h.judge, prompts(2)) }()
			id := <-created
			const why = "Enqueued token limit reached for gpt-4o-mini in organization org-x. Limit: 90,000 enqueued tokens."
			if err := srv.FailBatch(id, "token_limit_exceeded", why); err != nil {
				t.Fatal(err)
			}
			for _, r := range <-done {
				if r.Error == nil || !strings.Contains(r.Error.Message, "batch "+id+" failed: token_limit_exceeded: "+why) ||
					!strings.Contains(r.Error.Message, "lower --concurrency") {
					t.Errorf("error %v; want the batch's reason and what to do", r.Error)
				}
			}
			if n := srv.BatchCreates(); n != 1 {
				t.Errorf("%d batches created; want 1", n)
			}
		})
	}
}
