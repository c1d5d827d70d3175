package sdktest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/host"
)

// Once builds a plugin once per test binary, into a temporary directory
// of its own that Remove deletes (from TestMain, after m.Run). A failed
// build fails every test that asks for it, with the build's output.
type Once struct {
	once sync.Once
	dir  string
	err  error
}

// Dir runs build in a fresh directory on the first call and returns that
// directory.
func (o *Once) Dir(t testing.TB, build func(dir string) error) string {
	t.Helper()
	o.once.Do(func() {
		if o.dir, o.err = os.MkdirTemp("", "sdktest-"); o.err == nil {
			o.err = build(o.dir)
		}
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.dir
}

// Remove deletes what the build wrote, if it ran.
func (o *Once) Remove() {
	if o.dir != "" {
		os.RemoveAll(o.dir)
	}
}

// Command runs args in dir ("" is the test's) with env added to the
// test's, its output in the error.
func Command(dir string, env []string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// WriteDigest writes path's digest, "sha256:<hex>", to path+".sha256"
// (the sha256_file a config names) and returns it.
func WriteDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.WriteFile(path+".sha256", []byte(digest+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing the digest of %s: %w", path, err)
	}
	return digest, nil
}

// Main is an SDK or example test binary's TestMain: first the sandbox
// trampoline of the process plugins it starts (host.MaybeRunTrampoline,
// which returns at once in any other process), then the tests, then
// builds' directories removed.
func Main(m *testing.M, builds ...*Once) {
	host.MaybeRunTrampoline()
	code := m.Run()
	for _, b := range builds {
		b.Remove()
	}
	os.Exit(code)
}
