package trust

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxKeyFile bounds a key file read.
const maxKeyFile = 16 << 10

// PublicKey is a publisher's verification key and its id.
type PublicKey struct {
	Key ed25519.PublicKey
	// ID is "ed25519:" and the first 16 hex digits of the sha256 of the
	// key's PKIX encoding: what a signature and a lockfile name.
	ID string
}

// KeyID is the id of pub.
func KeyID(pub ed25519.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return "ed25519:" + hex.EncodeToString(sum[:8])
}

// PrivateKeyID is the id of priv's public key.
func PrivateKeyID(priv ed25519.PrivateKey) string { return KeyID(priv.Public().(ed25519.PublicKey)) }

// GenerateKeyPair writes a new key pair to base+".key" (mode 0600) and
// base+".pub", refusing to overwrite either. It returns the key id.
func GenerateKeyPair(base string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", err
	}
	pkix, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	for _, f := range []struct {
		path  string
		block string
		der   []byte
		mode  os.FileMode
	}{{base + ".key", "PRIVATE KEY", pkcs8, 0o600}, {base + ".pub", "PUBLIC KEY", pkix, 0o644}} {
		out, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return "", fmt.Errorf("write key: %w", err)
		}
		err = pem.Encode(out, &pem.Block{Type: f.block, Bytes: f.der})
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("write key %s: %w", f.path, err)
		}
	}
	return KeyID(pub), nil
}

// LoadPublicKey reads a PEM "PUBLIC KEY" holding an ed25519 key.
func LoadPublicKey(path string) (PublicKey, error) {
	der, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return PublicKey{}, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return PublicKey{}, fmt.Errorf("public key %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return PublicKey{}, fmt.Errorf("public key %s: a %T, not an ed25519 key", path, k)
	}
	return PublicKey{Key: pub, ID: KeyID(pub)}, nil
}

// LoadPrivateKey reads a PEM "PRIVATE KEY" (PKCS#8) holding an ed25519 key.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	der, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("private key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key %s: a %T, not an ed25519 key", path, k)
	}
	return priv, nil
}

func readPEM(path, blockType string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("key %s: larger than %d bytes; not a key file", path, maxKeyFile)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("key " + path + ": no PEM block")
	}
	if block.Type != blockType {
		return nil, fmt.Errorf("key %s: a PEM %q block, want %q", path, block.Type, blockType)
	}
	return block.Bytes, nil
}
