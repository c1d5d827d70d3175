package engine

import (
	"context"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// stillCompiling is a plugin whose compile ends when the test says; ready
// is closed once a caller waits for it.
type stillCompiling struct {
	plugin.Plugin
	done, waiting chan struct{}
}

func (p *stillCompiling) Done() <-chan struct{} { return p.done }

func (p *stillCompiling) Ready(ctx context.Context) error {
	close(p.waiting)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A case that reaches a plugin still compiling reports its wait; one that
// reaches a compiled plugin, or a plugin compiled up front, reports none.
func TestAwaitCompile(t *testing.T) {
	p := &stillCompiling{done: make(chan struct{}), waiting: make(chan struct{})}
	got := make(chan time.Duration)
	go func() { got <- awaitCompile(context.Background(), p) }()
	<-p.waiting
	close(p.done)
	if d := <-got; d <= 0 {
		t.Errorf("a case that waited for the compile reports %v", d)
	}
	// Compiled now: no wait, and Ready is not called again.
	if d := awaitCompile(context.Background(), p); d != 0 {
		t.Errorf("a compiled plugin: wait %v, want 0", d)
	}
	var upFront plugin.Plugin // not a Deferred
	if d := awaitCompile(context.Background(), upFront); d != 0 {
		t.Errorf("a plugin compiled up front: wait %v, want 0", d)
	}
}

func TestWaitsCountOverlapsOnce(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name string
		ivs  [][2]int // start second, length in seconds
		want time.Duration
	}{
		{"none", nil, 0},
		{"one", [][2]int{{0, 3}}, 3 * time.Second},
		{"disjoint", [][2]int{{5, 1}, {0, 2}}, 3 * time.Second},
		{"nested", [][2]int{{0, 10}, {2, 3}}, 10 * time.Second},
		{"overlapping", [][2]int{{0, 4}, {3, 4}, {10, 1}}, 8 * time.Second},
		{"zero lengths ignored", [][2]int{{0, 0}, {1, 2}}, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w waits
			for _, iv := range tc.ivs {
				w.add(at(iv[0]), time.Duration(iv[1])*time.Second)
			}
			if got := w.total(); got != tc.want {
				t.Errorf("total %v, want %v", got, tc.want)
			}
		})
	}
}
