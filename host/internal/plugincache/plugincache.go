// Package plugincache is the local, content-addressed cache of plugins
// pulled from registries: manifests, configs, modules and signature
// documents, each stored under its own sha256, so a run pinned by
// anvil.lock needs no network once the cache is warm.
//
// Invariants: a blob is stored at blobs/sha256/<hex of its content> and
// written atomically (temp file, then rename), so a reader never sees half
// a blob; every read re-hashes the bytes and treats a blob whose content
// does not match its name as absent-and-corrupt (an error naming the
// digest), so a tampered cache is refused, never loaded. The cache decides
// nothing about trust: callers verify manifests, signatures and policy.
package plugincache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrMiss is returned for a digest the cache does not hold.
var ErrMiss = errors.New("not in the plugin cache")

// EnvDir overrides where the cache lives.
const EnvDir = "ANVIL_PLUGIN_CACHE"

var digestRE = regexp.MustCompile(`^sha256:([0-9a-f]{64})$`)

// DefaultDir is $ANVIL_PLUGIN_CACHE, else the user cache directory's
// anvil/plugins ($XDG_CACHE_HOME/anvil/plugins on Linux).
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("plugin cache: %w (set $%s)", err, EnvDir)
	}
	return filepath.Join(d, "anvil", "plugins"), nil
}

// Cache is a plugin cache directory.
type Cache struct{ dir string }

// Open opens (creating) the cache at dir.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("plugin cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "signatures", "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("plugin cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// Dir is the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Path is where the blob with digest d is (or would be) stored.
func (c *Cache) Path(d string) (string, error) {
	m := digestRE.FindStringSubmatch(d)
	if m == nil {
		return "", fmt.Errorf("plugin cache: digest %q is not sha256:<64 lower-case hex digits>", d)
	}
	return filepath.Join(c.dir, "blobs", "sha256", m[1]), nil
}

// Put stores b (mode 0644, or 0755 when executable) and returns its digest.
func (c *Cache) Put(b []byte, executable bool) (string, error) {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	path, _ := c.Path(d)
	mode := os.FileMode(0o644)
	if executable {
		mode = 0o755
	}
	if err := writeAtomic(path, b, mode); err != nil {
		return "", fmt.Errorf("plugin cache: store %s: %w", d, err)
	}
	return d, nil
}

// Get reads the blob d, at most maxBytes of it, and checks its content.
func (c *Cache) Get(d string, maxBytes int64) ([]byte, error) {
	path, err := c.Path(d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", d, ErrMiss)
	}
	if err != nil {
		return nil, fmt.Errorf("plugin cache: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("plugin cache: %s: %w", d, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("plugin cache: %s is larger than %d bytes", d, maxBytes)
	}
	sum := sha256.Sum256(b)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != d {
		return nil, fmt.Errorf("plugin cache: blob %s holds content with digest %s: the cache was tampered with or is corrupt (delete %s)", d, got, path)
	}
	return b, nil
}

// Has reports whether blob d is stored (without verifying it).
func (c *Cache) Has(d string) bool {
	path, err := c.Path(d)
	if err != nil {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}

// PutSignatures adds the signature documents of subject to those
// recorded, each stored as a blob. It adds rather than replaces: one
// manifest (one digest) can sit in several repositories, each with its
// own referrers, and a signature of the digest is as good as any other
// wherever it was found — replacing would let a lock of the digest under
// another repository drop the signatures a run of this one needs offline.
// At most maxRecorded are kept, the newest.
func (c *Cache) PutSignatures(subject string, sigs [][]byte) error {
	m := digestRE.FindStringSubmatch(subject)
	if m == nil {
		return fmt.Errorf("plugin cache: subject %q is not a sha256 digest", subject)
	}
	var lines []string
	for _, s := range sigs {
		d, err := c.Put(s, false)
		if err != nil {
			return err
		}
		lines = append(lines, d)
	}
	return c.addLines(filepath.Join(c.dir, "signatures", "sha256", m[1]), lines)
}

// maxRecorded bounds the signatures or attestations recorded per subject.
const maxRecorded = 64

// addLines adds lines to the list file at path, each once, keeping the
// newest maxRecorded.
func (c *Cache) addLines(path string, lines []string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("plugin cache: %w", err)
	}
	var list []string
	seen := map[string]bool{}
	for _, l := range append(strings.Split(string(old), "\n"), lines...) {
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		list = append(list, l)
	}
	if len(list) > maxRecorded {
		list = list[len(list)-maxRecorded:]
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("plugin cache: %w", err)
	}
	return writeAtomic(path, []byte(strings.Join(list, "\n")), 0o644)
}

// Signatures returns the recorded signature documents of subject; none
// recorded is (nil, ErrMiss).
func (c *Cache) Signatures(subject string) ([][]byte, error) {
	m := digestRE.FindStringSubmatch(subject)
	if m == nil {
		return nil, fmt.Errorf("plugin cache: subject %q is not a sha256 digest", subject)
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "signatures", "sha256", m[1]))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("signatures of %s: %w", subject, ErrMiss)
	}
	if err != nil {
		return nil, fmt.Errorf("plugin cache: %w", err)
	}
	var out [][]byte
	for _, d := range strings.Fields(string(b)) {
		s, err := c.Get(d, 64<<10)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Attested is a conformance attestation as cached: its referrer
// manifest's digest (what its signatures sign, recorded with
// PutSignatures) and its document.
type Attested struct {
	Digest string
	Doc    []byte
}

// PutAttestations adds the conformance attestations of subject to those
// recorded (as PutSignatures adds, and for the same reason), each
// document stored as a blob.
func (c *Cache) PutAttestations(subject string, atts []Attested) error {
	m := digestRE.FindStringSubmatch(subject)
	if m == nil {
		return fmt.Errorf("plugin cache: subject %q is not a sha256 digest", subject)
	}
	var lines []string
	for _, a := range atts {
		if !digestRE.MatchString(a.Digest) {
			return fmt.Errorf("plugin cache: attestation %q is not a sha256 digest", a.Digest)
		}
		d, err := c.Put(a.Doc, false)
		if err != nil {
			return err
		}
		lines = append(lines, a.Digest+" "+d)
	}
	return c.addLines(filepath.Join(c.dir, "conformance", "sha256", m[1]), lines)
}

// Attestations returns the recorded conformance attestations of subject;
// none recorded is (nil, ErrMiss).
func (c *Cache) Attestations(subject string) ([]Attested, error) {
	m := digestRE.FindStringSubmatch(subject)
	if m == nil {
		return nil, fmt.Errorf("plugin cache: subject %q is not a sha256 digest", subject)
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "conformance", "sha256", m[1]))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("conformance attestations of %s: %w", subject, ErrMiss)
	}
	if err != nil {
		return nil, fmt.Errorf("plugin cache: %w", err)
	}
	var out []Attested
	for _, line := range strings.Split(string(b), "\n") {
		att, doc, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		body, err := c.Get(doc, 1<<20)
		if err != nil {
			return nil, err
		}
		out = append(out, Attested{Digest: att, Doc: body})
	}
	return out, nil
}

func writeAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
