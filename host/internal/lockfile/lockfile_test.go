package lockfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/lockfile"
)

const d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
const d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"

func entry() *lockfile.Entry {
	return &lockfile.Entry{Ref: "oci://127.0.0.1:5000/team-a/textcheck:1.0", Digest: d1,
		MediaType: "application/vnd.oci.image.manifest.v1+json", Size: 800,
		Module:    lockfile.Blob{Digest: d2, MediaType: "application/wasm", Size: 5 << 20},
		Transport: "wasm", ABI: "1.1", Kinds: []string{"metric/exact_match"}, Capabilities: []string{}, Signer: "unsigned"}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "anvil.lock")
	want := &lockfile.Lock{Plugins: map[string]*lockfile.Entry{"textcheck": entry()}}
	if err := lockfile.Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := lockfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if _, err := lockfile.Read(filepath.Join(t.TempDir(), "none.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing lock: %v, want ErrNotExist", err)
	}
}

func TestPath(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[string]string{"/x/anvil.yaml": "/x/anvil.lock", "/x/judge.yml": "/x/judge.lock", "/x/cfg": "/x/cfg.lock"} {
		if got := lockfile.Path(cfg); got != want {
			t.Errorf("Path(%s) = %s, want %s", cfg, got, want)
		}
	}
}

// TestParseRefuses: a lockfile edited by hand into something malformed is
// an error naming the file and the field.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	good := `{"version":1,"plugins":{"p":{"ref":"oci://r/p:1","digest":"` + d1 + `","media_type":"m","size":1,` +
		`"module":{"digest":"` + d2 + `","media_type":"application/wasm","size":1},"transport":"wasm","abi":"1.1","kinds":[],"capabilities":[],"signer":"unsigned"}}}`
	if _, err := lockfile.Parse("anvil.lock", []byte(good)); err != nil {
		t.Fatalf("the good lock: %v", err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown field", `"signer"`, `"trusted":true,"signer"`, `unknown field "trusted" at /plugins/p/trusted`},
		{"short digest", d1, "sha256:11", "plugins.p.digest"},
		{"upper-case digest", d2, strings.ToUpper(d2), "plugins.p.module.digest"},
		{"version", `"version":1`, `"version":2`, "version 2"},
		{"transport", `"transport":"wasm"`, `"transport":"native"`, "plugins.p.transport"},
		{"not a ref", `"oci://r/p:1"`, `"https://r/p:1"`, "plugins.p.ref"},
		{"no signer", `,"signer":"unsigned"`, ``, "signer are required"},
		{"size", `"size":1,"module"`, `"size":0,"module"`, "size and module.size must be positive"},
		{"trailing data", `}}}`, `}}} {}`, "line 1: not JSON"},
		{"duplicate digest", `"digest":"` + d1 + `"`, `"digest":"` + d2 + `","digest":"` + d1 + `"`, `line 1: duplicate key "digest" at /plugins/p/digest`},
		{"a key in another case", `"signer"`, `"Signer":"x","signer"`, `line 1: unknown field "Signer" at /plugins/p/Signer`},
		{"duplicate plugin", `"plugins":{`, `"plugins":{"p":null,`, `line 1: duplicate key "p" at /plugins/p`},
		{"duplicate version", `"version":1`, `"version":2,"version":1`, `line 1: duplicate key "version" at /version`},
	} {
		_, err := lockfile.Parse("anvil.lock", []byte(strings.Replace(good, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "anvil.lock: ") {
			t.Errorf("%s: %v; want an error naming anvil.lock and %q", c.name, err, c.want)
		}
	}
}

// TestParseNamesTheDuplicateKeysLine: in a lock as Write lays it out, a
// key given twice is refused with the line of its second occurrence (the
// one encoding/json would have kept, silently).
func TestParseNamesTheDuplicateKeysLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "anvil.lock")
	if err := lockfile.Write(path, &lockfile.Lock{Plugins: map[string]*lockfile.Entry{"textcheck": entry()}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, line string }{
		{"digest", `"digest": "` + d1 + `",`},
		{"abi", `"abi": "1.1",`},
	} {
		i := strings.Index(string(b), c.line)
		if i < 0 {
			t.Fatalf("no %s in\n%s", c.line, b)
		}
		edited := string(b[:i]) + c.line + "\n      " + string(b[i:])
		wantLine := strings.Count(edited[:i], "\n") + 2
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := lockfile.Read(path)
		want := fmt.Sprintf("%s: line %d: duplicate key %q at /plugins/textcheck/%s", path, wantLine, c.key, c.key)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s twice: %v; want %s", c.key, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"plugins":{}}`))
	f.Add([]byte(`{"version":1,"plugins":{"p":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := lockfile.Parse("anvil.lock", b)
		if err != nil {
			return
		}
		for name, e := range l.Plugins {
			if e == nil || !strings.HasPrefix(e.Ref, "oci://") || len(e.Digest) != 71 || len(e.Module.Digest) != 71 {
				t.Errorf("accepted entry %s: %+v", name, e)
			}
		}
	})
}
