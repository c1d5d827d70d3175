package scripted

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// A kind judges from several goroutines while its test may already be
// reading what was recorded: every read goes through the lock (run with
// -race), and what it returns is the caller's.
func TestHostRecordsConcurrentCallsSafely(t *testing.T) {
	h := &Host{Replies: []Reply{JSON("p", map[string]int{"score": 1})}}
	const workers, each = 4, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				req := abi.JudgeRequest{Purpose: "p", Messages: []abi.Message{{Role: "user", Content: fmt.Sprintf("w%d-%d", w, i)}}}
				if _, err := h.Judge(context.Background(), []abi.JudgeRequest{req, req}); err != nil {
					t.Error(err)
				}
				h.Log(context.Background(), slog.LevelInfo, "judged")
			}
		})
		wg.Go(func() {
			for range each {
				_, _, _ = h.Calls(), h.Batches(), h.Logs()
				_, _ = h.Purposes(), h.Shape()
			}
		})
	}
	wg.Wait()

	calls, batches, logs := h.Calls(), h.Batches(), h.Logs()
	if len(calls) != 2*workers*each || len(batches) != workers*each || len(logs) != workers*each || logs[0] != "INFO judged" {
		t.Fatalf("recorded %d calls, %d batches, %d logs (first %q); want %d, %d, %d",
			len(calls), len(batches), len(logs), logs[0], 2*workers*each, workers*each, workers*each)
	}
	calls[0].Purpose, batches[0], logs[0] = "changed", nil, "changed"
	if h.Calls()[0].Purpose != "p" || h.Batches()[0] == nil || h.Logs()[0] != "INFO judged" {
		t.Fatal("changing what an accessor returned changed what the host recorded")
	}
}
