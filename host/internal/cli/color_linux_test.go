package cli

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a real pseudo-terminal pair and returns its terminal end.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

func TestColorOnlyOnATerminalWithoutNoColor(t *testing.T) {
	tty := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	tests := []struct {
		name string
		out  any
		env  map[string]string
		want bool
	}{
		{"terminal", tty, nil, true},
		{"terminal, TERM=xterm", tty, map[string]string{"TERM": "xterm-256color"}, true},
		{"terminal, NO_COLOR=1", tty, map[string]string{"NO_COLOR": "1"}, false},
		{"terminal, NO_COLOR empty", tty, map[string]string{"NO_COLOR": ""}, true},
		{"terminal, TERM=dumb", tty, map[string]string{"TERM": "dumb"}, false},
		{"pipe", w, nil, false},
		{"buffer", &bytes.Buffer{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bool
			switch o := tt.out.(type) {
			case *os.File:
				got = colorFor(o, env(tt.env))
			case *bytes.Buffer:
				got = colorFor(o, env(tt.env))
			}
			if got != tt.want {
				t.Errorf("colorFor = %v; want %v", got, tt.want)
			}
		})
	}
}
