package sdk

import (
	"slices"
	"testing"
)

func TestFieldsNeeded(t *testing.T) {
	type cfg struct{ withContext bool }
	extra := func(c *cfg) []string {
		if c.withContext {
			return []string{"context"}
		}
		return nil
	}
	// A required list with room after it: the config's fields must not be
	// written into that room, where a later call would see them.
	backing := []string{"actual_output", "spare", "spare"}
	required := backing[:1]
	for _, tc := range []struct {
		name   string
		fields func(*cfg) []string
		c      cfg
		want   []string
	}{
		{"required only", nil, cfg{}, []string{"actual_output"}},
		{"fields add nothing", extra, cfg{}, []string{"actual_output"}},
		{"fields add context", extra, cfg{withContext: true}, []string{"actual_output", "context"}},
	} {
		got := fieldsNeeded(required, tc.fields, &tc.c)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if backing[1] != "spare" {
			t.Fatalf("%s: wrote %q into the required list's array", tc.name, backing[1])
		}
	}
	c := &cfg{}
	if n := testing.AllocsPerRun(100, func() { fieldsNeeded(required, nil, c) }); n != 0 {
		t.Errorf("%v allocations without config fields, want 0", n)
	}
}
