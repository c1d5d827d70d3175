package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
)

// SourceDigest is "sha256:<hex>" over Go packages' own source, as each
// embeds it (`//go:embed *.go`, exposed as Source() fs.FS): the bytes
// digested are exactly those the compiler was given for this build, on
// any platform, whatever the toolchain or flags — unlike a version string
// or a build ID. For each package in the order given, its non-test .go
// files at the root, in name order: test files are embedded by the
// pattern but do not change what a package does.
func SourceDigest(pkgs ...fs.FS) string {
	h := sha256.New()
	for i, src := range pkgs {
		fmt.Fprintf(h, "package %d;", i)
		entries, err := fs.ReadDir(src, ".")
		if err != nil {
			// An embed.FS built by the compiler does not fail; a digest
			// of nothing would pass for any code, so make it unmistakable.
			panic(fmt.Sprintf("identity: read embedded source: %v", err))
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := fs.ReadFile(src, name)
			if err != nil {
				panic(fmt.Sprintf("identity: read embedded %s: %v", name, err))
			}
			fmt.Fprintf(h, "%d:%s;%d:", len(name), name, len(b))
			h.Write(b)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
