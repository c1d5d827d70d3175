package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

func TestLoadDigest(t *testing.T) {
	ctx := context.Background()
	path := plugintest.GuestPath("textcheck")
	good := plugintest.GuestDigest(t, "textcheck")
	other := plugintest.GuestDigest(t, "hostile")

	// Bytes that are not Wasm at all: if they were compiled before the
	// digest check, the error would be a compile error, not a mismatch.
	notWasm := filepath.Join(t.TempDir(), "evil.wasm")
	if err := os.WriteFile(notWasm, []byte("definitely not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path, digest string
		mismatch           bool
		wantErr            []string // substrings; none: must load
	}{
		{name: "pinned", path: path, digest: good},
		{name: "bare upper-case hex", path: path, digest: strings.ToUpper(strings.TrimPrefix(good, "sha256:"))},
		{name: "mismatch", path: path, digest: other, mismatch: true,
			wantErr: []string{path, "want " + other, "got " + good, "refusing to compile"}},
		{name: "mismatch refused before compile", path: notWasm, digest: good, mismatch: true,
			wantErr: []string{notWasm, "want " + good}},
		{name: "no digest", path: path, digest: "", wantErr: []string{"no sha256 digest pinned", "plugin inspect"}},
		{name: "malformed digest", path: path, digest: "sha256:xyz", wantErr: []string{"64 hex digits"}},
		{name: "missing file", path: filepath.Join(t.TempDir(), "nope.wasm"), digest: good, wantErr: []string{"no such file"}},
		{name: "not wasm", path: notWasm, digest: transport.DigestOf([]byte("definitely not wasm")), wantErr: []string{"not a WebAssembly module"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testRT.Load(ctx, tc.path, tc.digest, transport.Options{})
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Info().Digest; got != good {
					t.Errorf("digest %s, want %s", got, good)
				}
				if err := p.Close(ctx); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				p.Close(ctx)
				t.Fatal("loaded; want an error")
			}
			if errors.Is(err, transport.ErrDigestMismatch) != tc.mismatch {
				t.Errorf("errors.Is(err, ErrDigestMismatch) = %v: %v", !tc.mismatch, err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q: %v", s, err)
				}
			}
		})
	}
}

// TestLoadRefusesBadModules covers the ABI checks at load: marker, exports
// and descriptor, each refused with an abi_violation naming path@digest.
func TestLoadRefusesBadModules(t *testing.T) {
	for _, tc := range []struct {
		guest string
		want  []string
	}{
		{"wrongabi", []string{"speaks Anvil ABI v2", "anvil_abi_v2", "this host speaks ABI v1"}},
		{"nomarker", []string{"no ABI marker export (anvil_abi_v1)"}},
		{"nodescribe", []string{"lacks the required export anvil_describe"}},
		{"nomeasure", []string{`kinds[0] "score_it": a metric kind needs the export anvil_measure`}},
		{"baddesc", []string{
			"version is empty",
			`name "Bad Name"`,
			`kinds[1] "dup": a metric kind of that name is already declared`,
			`kinds[2] "odd": role "gate"`,
			`kinds[3] "schema": config_schema: a JSON Schema is an object or a boolean`,
			`kinds[4] "prep": declares prepare but the module lacks the export anvil_prepare`,
			`kinds[5] "reffile": config_schema: `, `reference to "file:///etc/passwd" outside the schema`,
			`kinds[6] "refstdin": config_schema: `, `reference to "file:///dev/stdin" outside the schema`,
			`kinds[7] "refhttp": config_schema: `, `reference to "http://127.0.0.1:9/schema.json" outside the schema`,
			`kinds[8] "refrelative": config_schema: `,
		}},
	} {
		t.Run(tc.guest, func(t *testing.T) {
			path, digest := plugintest.GuestPath(tc.guest), plugintest.GuestDigest(t, tc.guest)
			p, err := testRT.Load(context.Background(), path, digest, transport.Options{})
			if err == nil {
				p.Close(context.Background())
				t.Fatal("loaded; want an error")
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != abi.CodeABI || ae.Plugin != path || ae.Digest != digest {
				t.Fatalf("want abi_violation naming %s@%s, got %#v", path, digest, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "plugin "+path+"@"+digest[:19]) {
				t.Errorf("message does not name path@digest: %s", msg)
			}
			for _, s := range tc.want {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
		})
	}
}

func TestInspect(t *testing.T) {
	info, err := testRT.Inspect(context.Background(), plugintest.GuestPath("judge"))
	if err != nil {
		t.Fatal(err)
	}
	d := info.Descriptor
	if info.Digest != plugintest.GuestDigest(t, "judge") || info.Transport != transport.TransportWasm || d.Name != "judge" || d.Version != "0.1.0" ||
		d.ABIMajor != abi.Major || !d.Asks(abi.CapJudge) || len(d.Kinds) != 1 || !d.Kinds[0].Prepare {
		t.Errorf("got %+v", info)
	}
}

// TestLoadConcurrentSameDigest loads one module from many goroutines at
// once into a fresh Runtime: they wait for one compile and share it, and
// every load works. The first compile is held until every other load is
// waiting for it, so exactly one compiles whatever the machine's load.
func TestLoadConcurrentSameDigest(t *testing.T) {
	const n = 4
	waiting := make(chan struct{}, n)
	var held sync.Once
	rt, err := NewRuntime(context.Background(), RuntimeOptions{
		CacheDir: plugintest.CacheDir(t.TempDir()),
		BeforeCompile: func(ctx context.Context, _ string) error {
			var err error
			held.Do(func() {
				for range n - 1 {
					select {
					case <-waiting:
					case <-ctx.Done():
						err = ctx.Err()
						return
					}
				}
			})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	rt.onWait = func(string) { waiting <- struct{}{} }
	path, digest := plugintest.GuestPath("garbage"), plugintest.GuestDigest(t, "garbage")
	type loaded struct {
		p   transport.Plugin
		err error
	}
	results := make(chan loaded, n)
	for range n {
		go func() {
			p, err := rt.Load(context.Background(), path, digest, transport.Options{Limits: transport.Limits{PoolSize: 1}})
			results <- loaded{p, err}
		}()
	}
	for range n {
		r := <-results
		if r.err != nil {
			t.Error(r.err)
			continue
		}
		defer r.p.Close(context.Background())
		if _, err := r.p.Measure(context.Background(), nil, &abi.MeasureRequest{Kind: "ok"}); err != nil {
			t.Error(err)
		}
	}
	if got := rt.leaders.Load(); got != 1 {
		t.Errorf("%d loads compiled, want 1 (the others wait for it)", got)
	}
}
