package rag

import "testing"

// A judge reply is untrusted: any bytes decode to one verdict list over
// the nodes or a problem, never a panic; every verdict names a node in
// range and a known value.
func FuzzParseNodeStatements(f *testing.F) {
	f.Add([]byte(`{"nodes":[{"statements":[{"statement":"s","verdict":"yes","reason":""}]},{"statements":[]}]}`), 2)
	f.Add([]byte(`{"nodes":[{"statements":null}]}`), 1)
	f.Add([]byte(`{"nodes":[]}`), 0)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vs, problem := parseNodeStatements(raw, n)
		if problem != "" && vs != nil {
			t.Fatalf("verdicts %v with problem %q", vs, problem)
		}
		for _, v := range vs {
			if v.Node < 1 || v.Node > n || v.Item == "" || (v.Verdict != VerdictYes && v.Verdict != VerdictNo) {
				t.Fatalf("verdict %+v for %d nodes", v, n)
			}
		}
	})
}
