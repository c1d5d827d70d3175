package content

import "testing"

// A judge reply is untrusted: any bytes decode to n answers or a problem,
// never a panic, and every answer is "yes", "no" or "idk".
func FuzzParseAnswers(f *testing.F) {
	f.Add([]byte(`{"answers":["yes","No.","idk"]}`), 3)
	f.Add([]byte(`{"answers":null}`), 1)
	f.Add([]byte(`{"answers":["maybe"]}`), 1)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		ans, problem := parseAnswers(raw, n)
		if problem != "" {
			return
		}
		if len(ans) != n {
			t.Fatalf("%d answers for %d questions without a problem", len(ans), n)
		}
		for _, a := range ans {
			if a != "yes" && a != "no" && a != "idk" {
				t.Fatalf("answer %q", a)
			}
		}
	})
}
