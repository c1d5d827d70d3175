package srcdigest

import (
	"testing"
	"testing/fstest"
)

// TestDigestFollowsTheCode: a word changed in a non-test file, a file
// added or a dependency changed gives another digest; a test file, a
// directory or a non-Go file does not.
func TestDigestFollowsTheCode(t *testing.T) {
	base := func() fstest.MapFS {
		return fstest.MapFS{
			"prompt.go": {Data: []byte(`package p; const system = "You are a meticulous evaluator."`)},
			"plan.go":   {Data: []byte(`package p`)},
		}
	}
	ref := Of(base(), "sha256:dep")
	for _, tc := range []struct {
		name   string
		change func(fstest.MapFS) []string
		same   bool
	}{
		{"one word of a prompt", func(f fstest.MapFS) []string {
			f["prompt.go"] = &fstest.MapFile{Data: []byte(`package p; const system = "You are a careful evaluator."`)}
			return []string{"sha256:dep"}
		}, false},
		{"a file added", func(f fstest.MapFS) []string {
			f["extra.go"] = &fstest.MapFile{Data: []byte(`package p`)}
			return []string{"sha256:dep"}
		}, false},
		{"a file renamed", func(f fstest.MapFS) []string {
			f["plan2.go"] = f["plan.go"]
			delete(f, "plan.go")
			return []string{"sha256:dep"}
		}, false},
		{"a dependency", func(f fstest.MapFS) []string { return []string{"sha256:other"} }, false},
		{"a test file", func(f fstest.MapFS) []string {
			f["prompt_test.go"] = &fstest.MapFile{Data: []byte(`package p`)}
			return []string{"sha256:dep"}
		}, true},
		{"a non-Go file and a directory", func(f fstest.MapFS) []string {
			f["README.md"] = &fstest.MapFile{Data: []byte(`notes`)}
			f["wasm/main.go"] = &fstest.MapFile{Data: []byte(`package main`)}
			return []string{"sha256:dep"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			deps := tc.change(f)
			if got := Of(f, deps...); (got == ref) != tc.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, ref, got == ref, tc.same)
			}
		})
	}
}
