package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/cputime"
)

// resultLines are results.jsonl lines as the writer makes them, and lines
// a damaged or hand-edited file may hold.
var resultLines = []string{
	`{"case_id":"a","config_hash":"h","metrics":[{"metric":"m","kind":"geval","status":"passed","gated":true,"score":0.7,"threshold":0.5,"reason":"fine","score_mode":"weighted","details":{"steps":["x"],"candidates":[{"value":7,"probability":0.6}]},"usage":{"requests":1,"calls":1,"http_attempts":1,"cache_hits":0,"input_tokens":9,"output_tokens":3,"usd":0.1},"latency_ms":12.5}]}`,
	`{"case_id":"b","config_hash":"h","metrics":[{"metric":"m","kind":"geval","status":"error","gated":true,"threshold":0.5,"error_class":"judge","error":{"code":"judge_error","message":"boom"},"details":null,"usage":{"requests":1,"calls":1,"http_attempts":3,"cache_hits":0,"input_tokens":0,"output_tokens":0,"usd":0},"latency_ms":1}]}`,
	`{"case_id":"c","config_hash":"h","metrics":[{"metric":"m","kind":"geval","status":"failed","score":0.1,"threshold":0.5,"details":"a string","spread":{"n":3,"mean":0.1,"std_dev":0.05,"min":0,"max":0.2,"flipped":true},"panel":[{"judge":"j1","score":0.1}],"aggregate":"mean","usage":{},"latency_ms":2},{"metric":"n","kind":"dag","status":"skipped","reason":"no expected_output","details":[1,{"x":[]}],"usage":{},"latency_ms":0}]}`,
	`{"case_id":"d","config_hash":"h","metrics":[]}`,
	`{"case_id":"e","config_hash":"h"}`,
	`{"Case_ID":"f","CONFIG_HASH":"h","Metrics":[{"Metric":"m","Details":{"k":1},"Status":"passed"}]}`,
}

// badResultLines do not decode; both walks must say so in the same words.
var badResultLines = []string{
	`{"case_id":"x","metrics":[{"metric":"m","score":"high","details":{}}]}`,
	`{"case_id":"x","metrics":[{"metric":"m","details":{"a":}}]}`,
	`{"case_id":"x","metrics":{"metric":"m"}}`,
	`{"case_id":7}`,
	`not json`,
	``,
}

func writeResults(t testing.TB, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func walkResults(each func(string, func(*CaseResult) error) error, path string) ([]CaseResult, error) {
	var out []CaseResult
	err := each(path, func(r *CaseResult) error { out = append(out, *r); return nil })
	return out, err
}

// withoutDetails is rs as EachOutcome gives them.
func withoutDetails(rs []CaseResult) []CaseResult {
	for i := range rs {
		for m := range rs[i].Metrics {
			rs[i].Metrics[m].Details = nil
		}
	}
	return rs
}

// EachOutcome gives what EachResult gives but the details, and fails
// where and as EachResult fails.
func TestEachOutcomeIsEachResultWithoutDetails(t *testing.T) {
	path := writeResults(t, resultLines)
	full, err := walkResults(EachResult, path)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := walkResults(EachOutcome, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != len(resultLines) {
		t.Fatalf("%d results; want %d", len(full), len(resultLines))
	}
	if want := withoutDetails(full); !reflect.DeepEqual(lean, want) {
		t.Errorf("EachOutcome:\n%+v\nwant\n%+v", lean, want)
	}
	for i, bad := range badResultLines {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := writeResults(t, []string{resultLines[0], bad, resultLines[1]})
			_, ferr := walkResults(EachResult, path)
			_, lerr := walkResults(EachOutcome, path)
			if ferr == nil || lerr == nil || ferr.Error() != lerr.Error() {
				t.Errorf("EachResult: %v\nEachOutcome: %v", ferr, lerr)
			}
		})
	}
}

// EachResultAt gives the results at the positions asked, whole, and reads
// no further than the last.
func TestEachResultAt(t *testing.T) {
	path := writeResults(t, resultLines)
	full, err := walkResults(EachResult, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range [][]int{nil, {0}, {2, 5}, {0, 1, 2, 3, 4, 5}, {5}, {4, 9}} {
		var got []CaseResult
		err := EachResultAt(path, at, func(r *CaseResult) error { got = append(got, *r); return nil })
		if err != nil {
			t.Fatalf("at %v: %v", at, err)
		}
		var want []CaseResult
		for _, i := range at {
			if i < len(full) {
				want = append(want, full[i])
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("at %v: %+v; want %+v", at, got, want)
		}
	}
	// A damaged line at a position asked for is EachResult's error; one
	// after the last position is never read.
	path = writeResults(t, []string{resultLines[0], badResultLines[0], badResultLines[4]})
	_, ferr := walkResults(EachResult, path)
	if err := EachResultAt(path, []int{0, 1}, func(*CaseResult) error { return nil }); err == nil || err.Error() != ferr.Error() {
		t.Errorf("EachResultAt over a damaged line: %v; want %v", err, ferr)
	}
	if err := EachResultAt(path, []int{0}, func(*CaseResult) error { return nil }); err != nil {
		t.Errorf("EachResultAt before the damaged lines: %v", err)
	}
}

// FuzzEachOutcome: the outcome walk against EachResult on any line.
func FuzzEachOutcome(f *testing.F) {
	for _, l := range append(append([]string{}, resultLines...), badResultLines...) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			t.Skip("one line")
		}
		path := writeResults(t, []string{line})
		full, ferr := walkResults(EachResult, path)
		lean, lerr := walkResults(EachOutcome, path)
		if (ferr == nil) != (lerr == nil) || ferr != nil && ferr.Error() != lerr.Error() {
			t.Fatalf("EachResult: %v\nEachOutcome: %v", ferr, lerr)
		}
		if ferr == nil && !reflect.DeepEqual(lean, withoutDetails(full)) {
			t.Fatalf("EachOutcome %+v; EachResult %+v", lean, full)
		}
	})
}

// BenchmarkEachOutcome walks 2,000 results lines of bench/run.sh's shape
// (~1.2 KB each, two thirds details) as the summary does, and in full.
func BenchmarkEachOutcome(b *testing.B) {
	line := `{"case_id":"case-%06d","config_hash":"09935636f1fa8763","metrics":[{"metric":"correctness","kind":"geval","status":"failed","gated":false,"score":0.019999999999999997,"threshold":0.5,"reason":"The actual output misses the point of the input and gives little of what the expected output contains.","score_mode":"weighted","details":{"steps":["Read the Input and identify exactly what it asks for.","Compare the Actual Output with the Expected Output, noting facts that agree, are missing or contradict it.","Check that the Actual Output answers the Input directly, without irrelevant or invented content.","Weigh contradictions and omissions most heavily, then minor issues of clarity."],"steps_source":"generated","raw_score":0,"weighted_score":0.19999999999999998,"score_mode":"weighted","candidates":[{"value":0,"probability":0.6},{"value":1,"probability":0.15}],"score_range":[0,10],"prompt_version":"anvil-geval-v1","usage":{"model":"bench-judge","input_tokens":659,"output_tokens":36,"usd":0.00012044999999999999,"cache_hit":false}},"usage":{"requests":1,"calls":1,"http_attempts":1,"cache_hits":0,"input_tokens":659,"output_tokens":36,"usd":0.00012044999999999999},"latency_ms":100.601}]}`
	lines := make([]string, 2000)
	for i := range lines {
		lines[i] = fmt.Sprintf(line, i)
	}
	path := writeResults(b, lines)
	for _, w := range []struct {
		name string
		each func(string, func(*CaseResult) error) error
	}{{"outcome", EachOutcome}, {"result", EachResult}} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			cputime.Report(b)
			for b.Loop() {
				if err := w.each(path, func(*CaseResult) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
