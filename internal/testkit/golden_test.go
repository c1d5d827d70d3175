package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Golden reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// golden runs Golden on its own goroutine, which Fatalf ends.
func golden(r *recorder, path string, got []byte, update bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Golden(r, path, got, update)
	}()
	<-done
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	for _, tc := range []struct {
		name   string
		got    string
		update bool
		want   string // in the one error; "" for none
	}{
		{"missing", "a\nb\n", false, "no such file"},
		{"written", "a\nb\n", true, ""},
		{"same", "a\nb\n", false, ""},
		{"line differs", "a\nc\n", false, "at line 2 (run go test -update and review the diff):\n got: c\nwant: b"},
		{"shorter", "a", false, "at line 2 (run go test -update and review the diff):\n got: (end of output)\nwant: b"},
		{"longer", "a\nb\n\nc", false, "at line 4 (run go test -update and review the diff):\n got: c\nwant: (end of output)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			golden(r, path, []byte(tc.got), tc.update)
			switch {
			case tc.want == "" && len(r.errors) != 0:
				t.Errorf("errors %q, want none", r.errors)
			case tc.want != "" && (len(r.errors) != 1 || !strings.Contains(r.errors[0], tc.want)):
				t.Errorf("errors %q, want one containing %q", r.errors, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Errorf("golden file %q, %v: only update writes it", b, err)
	}
}
