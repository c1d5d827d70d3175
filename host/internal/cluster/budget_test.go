package cluster

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/judgetest"
)

// meteredJudge serves judge's replies after a fixed latency and measures
// what the judge sees: the most calls in flight at once, when each call
// arrived, and the tokens each call carried (see requestTokens).
type meteredJudge struct {
	inflight, peak atomic.Int64
	mu             sync.Mutex
	arrivals       []time.Time
	tokens         []int // tokens[i]: the tokens of the call that arrived at arrivals[i]
	url            string
}

func newMeteredJudge(t *testing.T, judge *judgetest.Server, latency time.Duration) *meteredJudge {
	t.Helper()
	mj := &meteredJudge{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := judge.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := mj.inflight.Add(1)
		defer mj.inflight.Add(-1)
		for p := mj.peak.Load(); n > p && !mj.peak.CompareAndSwap(p, n); p = mj.peak.Load() {
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mj.mu.Lock()
		mj.arrivals = append(mj.arrivals, time.Now()) // under the lock: in order
		mj.tokens = append(mj.tokens, requestTokens(body))
		mj.mu.Unlock()
		time.Sleep(latency) // the judge's latency, not synchronisation
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	mj.url = "http://" + ln.Addr().String() + "/v1"
	return mj
}

// busiestWindow is the most calls that arrived within any span of d.
func (mj *meteredJudge) busiestWindow(d time.Duration) int {
	mj.mu.Lock()
	defer mj.mu.Unlock()
	most, lo := 0, 0
	for hi, at := range mj.arrivals {
		for at.Sub(mj.arrivals[lo]) >= d {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// TestOneJudgeBudgetAcrossWorkers: three workers that could each keep 8
// calls in flight hold together to the judge's max_concurrency (3) and
// requests_per_minute (1200: 20 a second after a burst of 3), as
// measured at the judge.
func TestOneJudgeBudgetAcrossWorkers(t *testing.T) {
	judge := deterministicJudge(t)
	mj := newMeteredJudge(t, judge, 25*time.Millisecond)
	dir := project(t, mj.url, 45, false)
	cfgPath := filepath.Join(dir, "anvil.yaml")
	b, _ := os.ReadFile(cfgPath)
	limited := strings.Replace(string(b), "    price:", "    max_concurrency: 3\n    requests_per_minute: 1200\n    price:", 1)
	if err := os.WriteFile(cfgPath, []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 3, WorkerOptions{Concurrency: 8})
	s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != 45 || s.Judge.Calls != 46 {
		t.Fatalf("%d cases, %d judge calls; want 45 and 46", s.Cases, s.Judge.Calls)
	}
	if peak := mj.peak.Load(); peak > 3 {
		t.Errorf("the judge saw %d calls in flight at once; the cluster's max_concurrency is 3", peak)
	}
	// Arrival times at the judge carry the jitter of a loaded machine on
	// top of the limiter's grants (two grants 50 ms apart may arrive
	// together), so the rate is checked over the whole run, with half a
	// second of slack: 46 calls at 20/s after a burst of 3 take at least
	// 2.15 s. Without the shared budget they arrive within about 1 s.
	if span, least := mj.span(), time.Duration(float64(46-3)/20*float64(time.Second))-500*time.Millisecond; span < least {
		t.Errorf("the judge saw 46 calls within %v; requests_per_minute 1200 needs at least %v", span, least)
	}
	if busiest := mj.busiestWindow(time.Second); busiest > 3+30 {
		t.Errorf("the judge saw %d calls within one second; requests_per_minute 1200 allows 20 (after a burst of 3, with jitter 30)", busiest)
	}
}

// span is the time from the first call's arrival to the last's.
func (mj *meteredJudge) span() time.Duration {
	mj.mu.Lock()
	defer mj.mu.Unlock()
	if len(mj.arrivals) < 2 {
		return 0
	}
	return mj.arrivals[len(mj.arrivals)-1].Sub(mj.arrivals[0])
}
