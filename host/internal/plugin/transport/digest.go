package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrDigestMismatch is wrapped by the error Load returns when the module's
// sha256 is not the pinned one. Nothing of such a module is compiled or run.
var ErrDigestMismatch = errors.New("sha256 mismatch")

const DigestPrefix = "sha256:"

// DigestOf is the "sha256:<hex>" digest of b.
func DigestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// ParseDigest accepts "sha256:<hex>" or bare hex, any case, and returns the
// canonical "sha256:<lower hex>".
func ParseDigest(s string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(s))
	h = strings.TrimPrefix(h, DigestPrefix)
	if len(h) != sha256.Size*2 {
		return "", fmt.Errorf("sha256 digest %q: want 64 hex digits, optionally prefixed by %q", s, DigestPrefix)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("sha256 digest %q: not hex", s)
	}
	return DigestPrefix + h, nil
}

// FileDigest is the "sha256:<hex>" of the regular file at path, streamed:
// the digest a config pins, computed as the host verifies it.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
