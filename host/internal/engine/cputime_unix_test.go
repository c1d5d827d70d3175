//go:build unix

package engine

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric to b, measured from when it is called
// to when the benchmark ends: on a machine shared with other work, CPU time
// says what a call costs where wall time says how busy the machine was.
// It counts every goroutine of the process (the GC's included).
func reportCPU(b *testing.B) {
	start := processCPU()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	})
}
