package trust

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
)

// SignatureVersion is the version of the signature document.
const SignatureVersion = 1

// payloadPrefix separates Anvil plugin signatures from any other use of
// the same key.
const payloadPrefix = "anvil-plugin-signature-v1\x00"

// maxSignatureDoc bounds a signature document.
const maxSignatureDoc = 16 << 10

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Signature is a signature document: an OCI referrer's layer, or a sidecar
// file (PATH.sig) beside a local module.
type Signature struct {
	Version int `json:"version"`
	// Subject is the digest signed: a plugin manifest's, or a local module's.
	Subject string `json:"subject"`
	KeyID   string `json:"key_id"`
	// Signature is the base64 ed25519 signature of the prefixed subject.
	Signature string `json:"signature"`
}

// Sign signs subject (a "sha256:<hex>" digest) with priv.
func Sign(priv ed25519.PrivateKey, subject string) ([]byte, error) {
	if !digestRE.MatchString(subject) {
		return nil, fmt.Errorf("sign: subject %q is not sha256:<64 lower-case hex digits>", subject)
	}
	s := Signature{Version: SignatureVersion, Subject: subject,
		KeyID:     KeyID(priv.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(payloadPrefix+subject)))}
	return json.MarshalIndent(s, "", "  ")
}

// ParseSignature decodes a signature document strictly.
func ParseSignature(b []byte) (Signature, error) {
	if len(b) > maxSignatureDoc {
		return Signature{}, fmt.Errorf("signature document of %d bytes is above %d", len(b), maxSignatureDoc)
	}
	var s Signature
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Signature{}, fmt.Errorf("signature document: %w", err)
	}
	if dec.More() {
		return Signature{}, errors.New("signature document: data after the JSON object")
	}
	if s.Version != SignatureVersion {
		return Signature{}, fmt.Errorf("signature document: version %d, want %d", s.Version, SignatureVersion)
	}
	if !digestRE.MatchString(s.Subject) {
		return Signature{}, fmt.Errorf("signature document: subject %q is not a sha256 digest", s.Subject)
	}
	return s, nil
}

// Verify reports whether s is pub's signature of subject.
func (s Signature) Verify(pub PublicKey, subject string) bool {
	if s.Subject != subject || s.KeyID != pub.ID {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(pub.Key, []byte(payloadPrefix+subject), sig)
}

// SidecarPath is where the signature of the local module at path lives.
func SidecarPath(path string) string { return path + ".sig" }

// ReadSidecar reads the signature beside a local module; none is (nil, nil).
func ReadSidecar(path string) ([][]byte, error) {
	f, err := os.Open(SidecarPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSignatureDoc+1))
	if err != nil {
		return nil, fmt.Errorf("signature %s: %w", SidecarPath(path), err)
	}
	return [][]byte{b}, nil
}
