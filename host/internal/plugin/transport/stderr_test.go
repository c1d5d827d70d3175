package transport

import (
	"strings"
	"testing"
)

func TestStderrBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"fits", []string{"ab\n", "cd\n"}, "ab\ncd\n"},
		{"exactly full", []string{"abcd", "efgh"}, "abcdefgh"},
		{"head and tail kept", []string{"HEAD", "middle-", "that-goes", "TAIL"}, "HEAD\n…(16 bytes dropped)…\nTAIL"},
		{"one big write", []string{"0123456789"}, "0123\n…(2 bytes dropped)…\n6789"},
		{"byte at a time", strings.Split("abcdefghij", ""), "abcd\n…(2 bytes dropped)…\nghij"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewStderrBuffer(8)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			b.Reset()
			if got := b.String(); got != "" {
				t.Errorf("after Reset: %q", got)
			}
		})
	}
}
