// Package srcdigest digests a Go package's own source as compiled into
// the running binary, so that two hosts can tell whether they link the
// same code of a first-party kind without trusting its version string.
//
// A package embeds its files (`//go:embed *.go`) and calls Of: the bytes
// digested are exactly those the compiler was given for this build, on
// any platform, whatever the toolchain or build flags. Test files are
// embedded by the pattern but not digested: they do not change what the
// package does.
//
// Invariants: the digest depends only on the non-test .go files' names
// and bytes and the digests of the dependencies passed in; pure.
package srcdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"strings"
)

// Of is "sha256:<hex>" over the non-test .go files at the root of src,
// in name order, then deps (the digests of the packages this one's
// behaviour depends on) in the order given.
func Of(src fs.FS, deps ...string) string {
	h := sha256.New()
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		// An embed.FS built by the compiler does not fail; a digest of
		// nothing would pass for any code, so make it unmistakable.
		panic(fmt.Sprintf("srcdigest: read embedded source: %v", err))
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := fs.ReadFile(src, name)
		if err != nil {
			panic(fmt.Sprintf("srcdigest: read embedded %s: %v", name, err))
		}
		put(h, "file", name, string(b))
	}
	for _, d := range deps {
		put(h, "dep", d)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// put writes each value length-prefixed, so no two inputs share an
// encoding.
func put(h hash.Hash, vs ...string) {
	for _, v := range vs {
		fmt.Fprintf(h, "%d:%s;", len(v), v)
	}
}
