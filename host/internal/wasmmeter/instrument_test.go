package wasmmeter

import (
	"testing"
)

func TestInstrumentedBehavesTheSame(t *testing.T) {
	for _, c := range moduleCases() {
		for _, opts := range []Options{{}, {MemoryBudget: 1 << 40}} {
			t.Run(c.name, func(t *testing.T) {
				h := compare(t, c.build().bytes(), opts, c.calls)
				if h.enters == 0 || h.enters != len(c.calls) {
					t.Errorf("enter called %d times for %d calls", h.enters, len(c.calls))
				}
			})
		}
	}
}
