package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Golden compares got with the golden file at path; with update (a
// package's -update flag) it first writes got there. A difference fails
// t naming the file and its first differing line, not the whole output.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	i := 0
	for i < len(g) && i < len(w) && bytes.Equal(g[i], w[i]) {
		i++
	}
	line := func(ls [][]byte) string {
		if i < len(ls) {
			return string(ls[i])
		}
		return "(end of output)"
	}
	t.Errorf("output differs from %s at line %d (run go test -update and review the diff):\n got: %s\nwant: %s", path, i+1, line(g), line(w))
}
