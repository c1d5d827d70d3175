package judge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/judgetest"
)

// batchJudgeWithTimeout is batchJudgeOn with the judge's timeout set to d.
func batchJudgeWithTimeout(t *testing.T, fl batchFlavour, srv *judgetest.Server, n int, d time.Duration) *harness {
	t.Helper()
	return newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		if fl.config != nil {
			fl.config(srv.URL())(c)
		}
		c.MaxRetries = 2
		c.Timeout = Duration(d)
	}, WithBatch(BatchOptions{MaxRequests: n, FlushAfter: time.Hour, PollEvery: time.Millisecond}))
}

// A batch's results that take longer to arrive than the judge's timeout,
// but keep arriving, are all read: the timeout bounds a stall, not the
// whole read (a large batch's results on a slow link take minutes).
func TestBatchResultsSlowerThanTheTimeout(t *testing.T) {
	const n = 6
	const timeout, gap = 3 * time.Second, 750 * time.Millisecond // n-1 gaps: 3.75 s in all
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			srv := fl.server(t)
			srv.PaceResults(gap)
			h := batchJudgeWithTimeout(t, fl, srv, n, timeout)
			for i, r := range doAll(context.Background(), h.judge, prompts(n)) {
				if r.Error != nil {
					t.Errorf("request %d: %v", i, r.Error)
				}
			}
			if c := srv.BatchCreates(); c != 1 {
				t.Errorf("%d batches created; want 1", c)
			}
		})
	}
}

// A batch exchange that stops moving is given up after the judge's
// timeout: a stalled read of results (after some lines), of a status or
// of a create. Its calls fail retryable, naming the stall, and what was
// read stands; nothing is sent in a new batch (the batch may still run).
func TestBatchExchangesThatStall(t *testing.T) {
	const n = 3
	const timeout = 2 * time.Second // generous: the exchanges that do not stall must each answer within it, on a loaded machine
	for _, tc := range []struct {
		name  string
		stall func(*judgetest.Server)
		// answered is how many requests succeed; resume, what the
		// others' errors say to do.
		answered int
		resume   string
	}{
		{"results", func(s *judgetest.Server) { s.StallResults(100, 1) }, 1, "run --resume reads the batch's results again"},
		{"status", func(s *judgetest.Server) { s.StallStatusReads(100) }, 0, "run --resume polls the batch again"},
		{"create", func(s *judgetest.Server) { s.StallCreates(1) }, 0, ""},
	} {
		for _, fl := range batchFlavours {
			t.Run(tc.name+"/"+fl.name, func(t *testing.T) {
				t.Parallel()
				srv := fl.server(t)
				tc.stall(srv)
				h := batchJudgeWithTimeout(t, fl, srv, n, timeout)
				answered := 0
				for i, r := range doAll(context.Background(), h.judge, prompts(n)) {
					switch {
					case r.Error == nil:
						answered++
					case !r.Error.Retryable || !strings.Contains(r.Error.Message, "stalled") ||
						!strings.Contains(r.Error.Message, "nothing sent or received for 2s") || !strings.Contains(r.Error.Message, tc.resume) ||
						strings.Contains(r.Error.Message, "context canceled"):
						t.Errorf("request %d: %+v; want a retryable error naming the stall and %q", i, r.Error, tc.resume)
					}
				}
				if answered != tc.answered {
					t.Errorf("%d requests answered; want %d", answered, tc.answered)
				}
				if tc.name != "create" && srv.BatchCreates() != 1 {
					t.Errorf("%d batches created; want 1 (none sent again)", srv.BatchCreates())
				}
			})
		}
	}
}
