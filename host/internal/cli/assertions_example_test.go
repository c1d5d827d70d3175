package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssertionsExample runs examples/assertions as README's reader would:
// no judge configured, no key, no recording — every metric a kind of the
// built-in assert plugin. The prose answer fails the gate (exit 1); each
// case's scores are the ones docs/metrics.md's formulas give by hand.
func TestAssertionsExample(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for _, f := range []string{"anvil.yaml", "cases.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, f), mustRead(t, filepath.Join("../../../examples/assertions", f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("assertions example: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "3 cases · 0 judge calls") {
		t.Errorf("table: %s", r.stdout)
	}
	want := map[string]map[string]float64{
		"weather-ok": {"answer-is-json": 1, "answer-schema": 1, "names-the-city": 1, "same-as-expected": 1,
			"close-to-expected": 1, "tools-any-order": 1, "tools-in-order": 1},
		// 71.6 > maximum 60; 4 edits over 58 characters; weather's
		// arguments match 2 of 3 keys: (1 + 2/3) / 2 in any order, and in
		// order only geocode or weather can count: max(1, 2/3) / 2.
		"weather-wrong-units": {"answer-is-json": 1, "answer-schema": 0, "same-as-expected": 0,
			"close-to-expected": 54.0 / 58, "tools-any-order": (1 + 2.0/3) / 2, "tools-in-order": 0.5},
		// No tool called: 0, not skipped.
		"weather-prose": {"answer-is-json": 0, "answer-schema": 0, "mentions-conditions": 1, "starts-as-object": 0,
			"close-to-expected": 5.0 / 55, "tools-any-order": 0, "tools-in-order": 0},
	}
	lines := resultLines(t, filepath.Join(dir, "out", "results.jsonl"))
	if len(lines) != 3 {
		t.Fatalf("%d result lines", len(lines))
	}
	for _, l := range lines {
		for _, m := range l.Metrics {
			w, ok := want[l.CaseID][m.Metric]
			if !ok {
				continue
			}
			if m.Score == nil || math.Abs(*m.Score-w) > 1e-12 {
				t.Errorf("%s %s: score %v (%s); want %v", l.CaseID, m.Metric, m.Score, m.Reason, w)
			}
		}
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if s.Judge.Calls != 0 {
		t.Errorf("judge calls %d; want 0", s.Judge.Calls)
	}

	// A pattern that does not compile is refused before any case, naming
	// the file, line, metric and field.
	cfg := strings.Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))), `(Paris|Lyon|Nice)"'`, `(Paris|Lyon"'`, 1)
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := runBinary(t, dir, nil, "run", "-c", "bad.yaml", "-o", "bad", "--no-progress")
	if bad.code == exitOK || bad.code == exitThreshold || !strings.Contains(bad.stderr, "bad.yaml:33: metric names-the-city: params.pattern: pattern is not a valid RE2 pattern") {
		t.Errorf("bad pattern: exit %d\n%s", bad.code, bad.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad", "results.jsonl")); err == nil {
		t.Error("a run with a bad pattern wrote results")
	}

	// A schema that refers outside itself is refused by validate, naming
	// the field; nothing is fetched (the URL is a closed loopback port).
	cfg = strings.Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))), "        type: object\n", "        $ref: 'http://127.0.0.1:9/city.json'\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "ref.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	v := runBinary(t, dir, nil, "validate", "-c", "ref.yaml")
	if v.code == exitOK || !strings.Contains(v.stderr, `metric answer-schema: params.schema: schema does not compile`) ||
		!strings.Contains(v.stderr, `reference to "http://127.0.0.1:9/city.json" outside the schema`) {
		t.Errorf("remote $ref: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
