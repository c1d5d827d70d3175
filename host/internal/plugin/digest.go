package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrDigestMismatch is wrapped by the error Load returns when the module's
// sha256 is not the pinned one. Nothing of such a module is compiled or run.
var ErrDigestMismatch = errors.New("sha256 mismatch")

const digestPrefix = "sha256:"

// digestOf is the "sha256:<hex>" digest of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// parseDigest accepts "sha256:<hex>" or bare hex, any case, and returns the
// canonical "sha256:<lower hex>".
func parseDigest(s string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(s))
	h = strings.TrimPrefix(h, digestPrefix)
	if len(h) != sha256.Size*2 {
		return "", fmt.Errorf("sha256 digest %q: want 64 hex digits, optionally prefixed by %q", s, digestPrefix)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("sha256 digest %q: not hex", s)
	}
	return digestPrefix + h, nil
}
