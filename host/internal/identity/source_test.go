package identity

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

// TestSourceDigestFollowsTheCode: a word changed in a non-test file, a
// file added or renamed, or a dependency changed gives another digest; a
// test file, a directory or a non-Go file does not.
func TestSourceDigestFollowsTheCode(t *testing.T) {
	t.Parallel()
	base := func() fstest.MapFS {
		return fstest.MapFS{
			"prompt.go": {Data: []byte(`package p; const system = "You are a meticulous evaluator."`)},
			"plan.go":   {Data: []byte(`package p`)},
		}
	}
	dep := fstest.MapFS{"score.go": {Data: []byte(`package score`)}}
	ref := SourceDigest(base(), dep)
	for _, tc := range []struct {
		name   string
		change func(fstest.MapFS) fs.FS
		same   bool
	}{
		{"one word of a prompt", func(f fstest.MapFS) fs.FS {
			f["prompt.go"] = &fstest.MapFile{Data: []byte(`package p; const system = "You are a careful evaluator."`)}
			return dep
		}, false},
		{"a file added", func(f fstest.MapFS) fs.FS {
			f["extra.go"] = &fstest.MapFile{Data: []byte(`package p`)}
			return dep
		}, false},
		{"a file renamed", func(f fstest.MapFS) fs.FS {
			f["plan2.go"] = f["plan.go"]
			delete(f, "plan.go")
			return dep
		}, false},
		{"a dependency", func(f fstest.MapFS) fs.FS {
			return fstest.MapFS{"score.go": {Data: []byte(`package score // changed`)}}
		}, false},
		{"a file moved to the dependency", func(f fstest.MapFS) fs.FS {
			delete(f, "plan.go")
			return fstest.MapFS{"score.go": {Data: []byte(`package score`)}, "plan.go": {Data: []byte(`package p`)}}
		}, false},
		{"a test file", func(f fstest.MapFS) fs.FS {
			f["prompt_test.go"] = &fstest.MapFile{Data: []byte(`package p`)}
			return dep
		}, true},
		{"a non-Go file and a directory", func(f fstest.MapFS) fs.FS {
			f["README.md"] = &fstest.MapFile{Data: []byte(`notes`)}
			f["wasm/main.go"] = &fstest.MapFile{Data: []byte(`package main`)}
			return dep
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			d := tc.change(f)
			if got := SourceDigest(f, d); (got == ref) != tc.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, ref, got == ref, tc.same)
			}
		})
	}
}
