// Tests of the C SDK's ABI minor 4 and 5 helpers through the real host: a
// probe plugin (testdata/probe.c) built from source with clang against
// anvil.h, loaded by host.Evaluate, its embeddings answered by the fake
// judge. Skipped, saying what to install, without a wasm32-wasi C
// toolchain (scripts/ci-deps-c installs it).
package csdk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

var built struct {
	once sync.Once
	dir  string
	skip string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// build compiles src (a path under testdata) into a reactor module, as
// the header's BUILD section says, and writes its .sha256 beside it.
func build(t *testing.T, src string) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "csdk-")
		if built.err != nil {
			return
		}
		if _, err := exec.LookPath("clang"); err != nil {
			built.skip = "clang not found; scripts/ci-deps-c installs clang, lld, wasi-libc and libclang-rt-dev-wasm32"
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	if built.skip != "" {
		t.Skip(built.skip)
	}
	out := filepath.Join(built.dir, strings.TrimSuffix(filepath.Base(src), ".c")+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-std=c11",
		"-Wall", "-Wextra", "-Werror", "-Wl,--strip-all", "-I", ".", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(b), "wasi") && (strings.Contains(string(b), "not found") || strings.Contains(string(b), "cannot find")) {
			t.Skipf("clang cannot build a wasm32-wasi reactor (%s); scripts/ci-deps-c installs clang, lld, wasi-libc and libclang-rt-dev-wasm32", bytes.TrimSpace(b))
		}
		t.Fatalf("clang %s: %v\n%s", src, err, b)
	}
	if _, err := sdktest.WriteDigest(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParity: the probe passes the SDKs' parity suite (sdktest.RunParity)
// through the real host. Its presence kind is TestNativePresence's: the
// probe has none.
func TestParity(t *testing.T) {
	sdktest.RunParity(t, sdktest.Probe{
		Plugin:     sdktest.Plugin{Name: "probe-c", Path: build(t, "testdata/probe.c")},
		Cosine:     "cosine",
		Turns:      "turns",
		NoPresence: "anvil_case_has is checked natively, by TestNativePresence",
		NoEmbed:    build(t, "testdata/noembed.c"),
	})
}

// TestNativeHelpers: anvil_embed's checks of the host's answer and the
// turn helpers, compiled for this machine (under AddressSanitizer and
// UBSan when clang has them) with the kernel stubbed, so the answers a
// real host never sends — a wrong count, ragged or non-numeric vectors,
// no answer — are fed to them; every kernel block must be freed. The
// output is compared with testdata/native.golden.
func TestNativeHelpers(t *testing.T) {
	bin := native(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("native: %v\n%s", err, stderr.Bytes())
	}
	want, err := os.ReadFile("testdata/native.golden")
	if err != nil {
		t.Fatal(err)
	}
	got, wantLines := strings.Split(stdout.String(), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(got), len(wantLines)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// native compiles testdata/native.c for this machine, under AddressSanitizer
// and UBSan when clang has them.
func native(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang not found; scripts/ci-deps-c installs it")
	}
	bin := filepath.Join(t.TempDir(), "native")
	args := []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-attributes", "-I", ".", "-o", bin, "testdata/native.c", "-lm"}
	if out, err := exec.Command("clang", append([]string{"-fsanitize=address,undefined", "-fno-sanitize-recover=all"}, args...)...).CombinedOutput(); err != nil {
		t.Logf("without sanitizers (%v: %s)", err, bytes.TrimSpace(out))
		if out, err := exec.Command("clang", args...).CombinedOutput(); err != nil {
			t.Fatalf("clang: %v\n%s", err, out)
		}
	}
	return bin
}

// TestNativePresence: anvil_case_has on context and retrieval_context
// follows the presence table the host is held to
// (abi/v1/testdata/presence.json): a list of only white-space strings is
// absent, white space being exactly Go's unicode.IsSpace (U+001C and
// U+FEFF are not; U+0085 and U+3000 are). Each row goes in as a case with
// the list in context, then one with it in retrieval_context, in JSON as
// encoding/json writes it, and once more with every character \u-escaped,
// as another writer may.
func TestNativePresence(t *testing.T) {
	bin := native(t)
	var in bytes.Buffer
	var want []string
	for _, row := range sdktest.PresenceRows(t) {
		items, err := json.Marshal(row.Items)
		if err != nil {
			t.Fatal(err)
		}
		if row.Items == nil {
			items = []byte("[]")
		}
		p := map[bool]string{false: "0", true: "1"}[row.Present]
		for _, list := range [][]byte{items, escapeAll(row.Items)} {
			fmt.Fprintf(&in, "{\"id\":\"c\",\"context\":%s}\n{\"id\":\"c\",\"retrieval_context\":%s}\n", list, list)
			want = append(want, row.Name+": "+p+" 0", row.Name+": 0 "+p)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "presence")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("native presence: %v\n%s", err, stderr.Bytes())
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d answers for %d cases:\n%s", len(got), len(want), stdout.Bytes())
	}
	for i, w := range want {
		name, has, _ := strings.Cut(w, ": ")
		if got[i] != has {
			form := map[bool]string{false: "escaped by encoding/json", true: "every character \\u-escaped"}[i%4 >= 2]
			field := map[bool]string{false: "context", true: "retrieval_context"}[i%2 == 1]
			t.Errorf("%s (%s, %s): context, retrieval_context present %s; want %s", name, field, form, got[i], has)
		}
	}
}

// escapeAll writes items as a JSON array with every character a \u
// escape (a surrogate pair beyond the BMP).
func escapeAll(items []string) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, u := range utf16.Encode([]rune(s)) {
			fmt.Fprintf(&b, "\\u%04x", u)
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return []byte(b.String())
}
