package textcheck

import (
	"fmt"
	"testing"
)

// TestMismatchReason: the reason built without fmt reads as the
// fmt.Sprintf it replaced.
func TestMismatchReason(t *testing.T) {
	for _, tc := range []struct {
		at        int
		got, want string
	}{
		{0, `"Mountain field while"…`, `"But migrate small ac"…`},
		{12, "end of text", `"x\n\"y\""`},
		{1 << 20, `"ünï"`, "end of text"},
	} {
		want := fmt.Sprintf("actual_output differs from expected_output at character %d: got %s, want %s", tc.at, tc.got, tc.want)
		if got := mismatchReason(tc.at, tc.got, tc.want); got != want {
			t.Errorf("mismatchReason(%d, %q, %q) = %q, want %q", tc.at, tc.got, tc.want, got, want)
		}
	}
}
