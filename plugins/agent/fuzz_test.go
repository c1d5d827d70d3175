package agent

import (
	"math"
	"testing"
)

// A judge reply is untrusted: any bytes decode to a score in [0, 1] with
// an outcome, or a problem; never a panic, never a score clamped into range.
func FuzzParseTask(f *testing.F) {
	f.Add([]byte(`{"task":"t","outcome":"o","score":0.5,"reason":"r"}`))
	f.Add([]byte(`{"task":"t","outcome":"o","score":8,"reason":"r"}`))
	f.Add([]byte(`{"score":1e400}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, problem := parseTask(raw)
		if problem != "" {
			return
		}
		if math.IsNaN(out.Score) || out.Score < 0 || out.Score > 1 || out.Outcome == "" {
			t.Fatalf("reply %+v without a problem", out)
		}
	})
}
