package engine

import "testing"

func TestMisspeltField(t *testing.T) {
	for _, tc := range []struct {
		name, near string
		bad        bool
	}{
		{"expected_output", "", false}, // a standard field
		{"expected_outptu", "expected_output", true},
		{"actual_ouput", "actual_output", true},
		{"inptu", "input", true},
		{"retreival_context", "retrieval_context", true},
		{"rubric_notes", "", false}, // far from every standard name: a free-form field
		{"turns", "", false},
	} {
		near, bad := misspelt(tc.name)
		if bad != tc.bad || (bad && near != tc.near) {
			t.Errorf("misspelt(%q) = %q, %v; want %q, %v", tc.name, near, bad, tc.near, tc.bad)
		}
	}
}
