package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// compiled is a plugin whose code may still be compiling when a case
// reaches it (plugin.Deferred, CompileInBackground).
type compiled interface {
	Done() <-chan struct{}
	Ready(ctx context.Context) error
}

// awaitCompile waits until p is compiled, when it may not be, and returns
// how long that took: the case's wait for the plugin's background
// compile, which a result reports apart from the metric's own time
// (MetricResult.CompileWaitMS). The plugin's own calls wait the same way;
// waiting here first only measures it. A refused plugin or a cancelled
// ctx returns at once: the call that follows reports why.
func awaitCompile(ctx context.Context, p plugin.Plugin) time.Duration {
	c, ok := p.(compiled)
	if !ok {
		return 0
	}
	select {
	case <-c.Done():
		return 0
	default:
	}
	start := time.Now()
	_ = c.Ready(ctx)
	return time.Since(start)
}

// waits is the wall-clock time covered by concurrent waits (a dag's nodes
// run concurrently): the union of their intervals, so two nodes waiting
// for the same compile count it once.
type waits struct {
	mu  sync.Mutex
	ivs [][2]time.Time
}

func (w *waits) add(start time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	w.mu.Lock()
	w.ivs = append(w.ivs, [2]time.Time{start, start.Add(d)})
	w.mu.Unlock()
}

// total is the union's length; call it once no wait is running.
func (w *waits) total() time.Duration {
	ivs := slices.Clone(w.ivs)
	slices.SortFunc(ivs, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var sum time.Duration
	var end time.Time
	for _, iv := range ivs {
		if iv[0].After(end) {
			end = iv[0]
		}
		if iv[1].After(end) {
			sum += iv[1].Sub(end)
			end = iv[1]
		}
	}
	return sum
}
