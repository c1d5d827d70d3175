package judge

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLimitedBody(t *testing.T) {
	for _, tc := range []struct {
		body    string
		limit   int64
		wantErr bool
	}{
		{"hello", 5, false},
		{"hello", 10, false},
		{"hello!", 5, true},
		{strings.Repeat("x", 1<<20), 1 << 19, true},
	} {
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tc.body)), left: tc.limit, limit: tc.limit}
		got, err := io.ReadAll(b)
		if (err != nil) != tc.wantErr {
			t.Fatalf("body %d bytes, limit %d: err %v", len(tc.body), tc.limit, err)
		}
		if !tc.wantErr && string(got) != tc.body {
			t.Fatalf("read %q, want %q", got, tc.body)
		}
		if tc.wantErr && int64(len(got)) > tc.limit {
			t.Fatalf("read %d bytes past the %d limit", len(got), tc.limit)
		}
		if tc.wantErr && errors.Is(err, io.EOF) {
			t.Fatalf("a cut body ended as EOF")
		}
	}
}
