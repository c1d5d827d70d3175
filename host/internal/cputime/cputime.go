// Package cputime measures the process's CPU time for benchmarks: on a
// machine shared with other work, CPU time says what a call costs where
// wall time says how busy the machine was. Only tests import it.
//
// Invariant: off unix, where getrusage is unavailable, Process reads 0 and
// Report adds no metric, so a benchmark never reports a made-up number.
package cputime

import (
	"testing"
	"time"
)

// Report adds a cpu-ns/op metric to b, measured from when it is called to
// when the benchmark ends. It counts every goroutine of the process (the
// GC's included).
func Report(b *testing.B) {
	start := Process()
	b.Cleanup(func() {
		if b.N > 0 && start > 0 {
			b.ReportMetric(float64(Process()-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

// Process is the process's user+system CPU time so far (0 off unix).
func Process() time.Duration { return process() }
