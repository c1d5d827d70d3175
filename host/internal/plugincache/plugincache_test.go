package plugincache_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugincache"
)

func TestPutGetAndTamper(t *testing.T) {
	c, err := plugincache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Put([]byte("module"), true)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.Get(d, 100); err != nil || string(b) != "module" {
		t.Errorf("Get = %q, %v", b, err)
	}
	path, _ := c.Path(d)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("an executable blob has mode %v, %v", st.Mode(), err)
	}
	if _, err := c.Get(d, 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Errorf("over the bound: %v", err)
	}
	if err := os.WriteFile(path, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(d, 100); err == nil || !strings.Contains(err.Error(), "tampered with or is corrupt") {
		t.Errorf("a tampered blob: %v", err)
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	if _, err := c.Get(missing, 100); !errors.Is(err, plugincache.ErrMiss) {
		t.Errorf("a missing blob: %v, want ErrMiss", err)
	}
	if _, err := c.Path("sha256:../../etc/passwd"); err == nil {
		t.Error("a digest that is a path was accepted")
	}
}

// TestSignatures: what is recorded of a digest grows with what each
// repository holding it had, so a lock of the digest under another
// repository (another publisher's copy) cannot drop the signatures and
// attestations an offline run of this one needs.
func TestSignatures(t *testing.T) {
	c, _ := plugincache.Open(t.TempDir())
	subject := "sha256:" + strings.Repeat("1", 64)
	if _, err := c.Signatures(subject); !errors.Is(err, plugincache.ErrMiss) {
		t.Errorf("none recorded: %v", err)
	}
	if err := c.PutSignatures(subject, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	sigs, err := c.Signatures(subject)
	if err != nil || len(sigs) != 2 || string(sigs[0]) != "a" || string(sigs[1]) != "b" {
		t.Errorf("Signatures = %q, %v", sigs, err)
	}
	for _, other := range [][][]byte{nil, {[]byte("m"), []byte("a")}} {
		if err := c.PutSignatures(subject, other); err != nil {
			t.Fatal(err)
		}
	}
	if sigs, err := c.Signatures(subject); err != nil || fmt.Sprintf("%s", sigs) != "[a b m]" {
		t.Errorf("after another repository's: %q, %v; want [a b m]", sigs, err)
	}

	att := "sha256:" + strings.Repeat("2", 64)
	if err := c.PutAttestations(subject, []plugincache.Attested{{Digest: att, Doc: []byte(`{"team":"a"}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutAttestations(subject, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.Attestations(subject)
	if err != nil || len(got) != 1 || got[0].Digest != att || string(got[0].Doc) != `{"team":"a"}` {
		t.Errorf("Attestations = %+v, %v", got, err)
	}
	if err := c.PutAttestations(subject, []plugincache.Attested{{Digest: "latest", Doc: nil}}); err == nil {
		t.Error("an attestation named by something else than a digest was recorded")
	}
}

func TestDefaultDir(t *testing.T) {
	if d, _ := plugincache.DefaultDir(func(k string) string { return map[string]string{plugincache.EnvDir: "/c"}[k] }); d != "/c" {
		t.Errorf("with $%s: %s", plugincache.EnvDir, d)
	}
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d, _ := plugincache.DefaultDir(func(string) string { return "" }); d != filepath.Join("/xdg", "anvil", "plugins") {
		t.Errorf("default: %s", d)
	}
}
