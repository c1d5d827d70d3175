package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The coordinator's watchdog: a run whose cases stop being written —
// no worker attached, every worker stalled, the NATS store full — is not
// waited on in silence. Every StallAfter without a case written while
// cases are pending, the coordinator says so on its log with what it
// knows: the cases pending, the work queue (waiting, in flight, workers
// pulling), the workers seen, the last result refused and the last NATS
// fault.

// maxWorkersSeen bounds the workers the watchdog names: peers choose
// their names.
const maxWorkersSeen = 256

// sawWorker records a worker name (co.mu held).
func (co *Coordinator) sawWorker(name string) {
	if !workerRE.MatchString(name) {
		return
	}
	if _, ok := co.workers[name]; !ok && len(co.workers) >= maxWorkersSeen {
		return
	}
	co.workers[name] = co.now()
}

// watch says so when no case was written for StallAfter while cases are
// pending, and again every StallAfter while that lasts.
func (d *dispatch) watch(ctx context.Context) {
	now, stall := d.co.now(), d.co.opts.StallAfter
	if len(d.expected) == 0 || now.Sub(d.lastProgress) < stall || now.Sub(d.lastNotice) < stall {
		return
	}
	d.lastNotice = now
	d.co.log.Warn(d.stallReport(ctx, now))
}

// stallReport is the watchdog's message.
func (d *dispatch) stallReport(ctx context.Context, now time.Time) string {
	co := d.co
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: no case written for %s; %d pending", now.Sub(d.lastProgress).Round(time.Second), len(d.expected))
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if cons, err := co.c.js.Consumer(qctx, casesStream, casesConsumer(co.runID)); err != nil {
		fmt.Fprintf(&b, "; the work queue did not answer: %v", err)
	} else if ci, err := cons.Info(qctx); err != nil {
		fmt.Fprintf(&b, "; the work queue did not answer: %v", err)
	} else {
		fmt.Fprintf(&b, " (work queue: %d waiting, %d in flight, %d redelivered; %d pull requests from workers)",
			ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting)
	}
	co.mu.Lock()
	names := make([]string, 0, len(co.workers))
	for name := range co.workers {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return co.workers[b].Compare(co.workers[a]) })
	seen := map[string]time.Time{}
	for _, n := range names {
		seen[n] = co.workers[n]
	}
	refusal := co.lastRefusal
	co.mu.Unlock()
	if len(names) == 0 {
		b.WriteString("; no worker has taken a case of this run: is an `anvil-host worker --cluster URL` running against this NATS server, with credentials of its account?")
	} else {
		b.WriteString("; workers seen (latest first): ")
		for i, n := range names {
			if i == 5 {
				fmt.Fprintf(&b, " and %d more", len(names)-5)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s ago", n, now.Sub(seen[n]).Round(time.Second))
		}
	}
	if refusal.Worker != "" {
		fmt.Fprintf(&b, "; last result refused: worker %s: %s", refusal.Worker, truncate(refusal.Reason, 300))
	}
	if fault, at := co.c.health.lastFault(); fault != "" {
		fmt.Fprintf(&b, "; last NATS fault %s ago: %s", co.c.health.now().Sub(at).Round(time.Second), fault)
	} else {
		b.WriteString("; no NATS fault seen")
	}
	return b.String()
}
