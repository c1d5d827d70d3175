package kwcovc_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host"
)

// TestScaffoldHeaderInSync: `plugin new --lang c` writes sdk/c/anvil.h
// itself into the project (it must build without the Anvil checkout).
func TestScaffoldHeaderInSync(t *testing.T) {
	sdk, err := os.ReadFile("../../../sdk/c/anvil.h")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hdr")
	if code := host.Main([]string{"plugin", "new", "hdr", "--lang", "c", "--dir", dir}); code != 0 {
		t.Fatalf("plugin new: exit %d", code)
	}
	written, err := os.ReadFile(filepath.Join(dir, "anvil.h"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sdk, written) {
		t.Fatal("plugin new --lang c wrote an anvil.h that differs from sdk/c/anvil.h")
	}
}

// TestScaffold: `plugin new NAME --lang c`, then, with no edits, build.sh,
// `plugin test` and `run` all succeed, and the scores are the ones the
// metric's rule gives on the scaffold's three cases.
func TestScaffold(t *testing.T) {
	need(t)
	dir := filepath.Join(t.TempDir(), "kw-c")
	start := time.Now()
	if code := host.Main([]string{"plugin", "new", "kw-c", "--lang", "c", "--dir", dir}); code != 0 {
		t.Fatalf("plugin new: exit %d", code)
	}
	for _, f := range []string{"plugin.c", "anvil.h", "build.sh", "anvil.yaml", "cases.jsonl", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("scaffold: %v", err)
		}
	}
	src, _ := os.ReadFile(filepath.Join(dir, "plugin.c"))
	if !strings.Contains(string(src), `#define KIND "kw_c"`) || !strings.Contains(string(src), `#define PLUGIN "kw-c"`) {
		t.Fatalf("plugin.c not rendered with the name and kind:\n%.600s", src)
	}
	build := exec.Command("./build.sh")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	} else if bytes.Contains(out, []byte("warning")) {
		t.Errorf("build.sh warns:\n%s", out)
	}
	wasm := filepath.Join(dir, "plugin.wasm")
	if code := host.Main([]string{"plugin", "test", wasm}); code != 0 {
		t.Fatalf("plugin test: exit %d", code)
	}
	if code := host.Main([]string{"plugin", "test", wasm, "--config", `kw_c={"keywords":["paris","capital"]}`}); code != 0 {
		t.Fatalf("plugin test --config: exit %d", code)
	}
	out := filepath.Join(t.TempDir(), "results")
	if code := host.Main([]string{"run", "-c", filepath.Join(dir, "anvil.yaml"), "-o", out, "--cache", "off"}); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	t.Logf("plugin new → build → plugin test ×2 → run: %v", time.Since(start).Round(time.Millisecond))

	cfg, err := host.LoadConfig(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The same cases through Evaluate, to check the values.
	res, err := host.Run(t.Context(), cfg, host.Options{Cache: "off", StorePath: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		score  float64
		reason string
	}{
		"both":  {1, "found 2 of 2 keywords"},
		"upper": {1, "found 2 of 2 keywords"},
		"one":   {0.5, "found 1 of 2 keywords; missing: capital"},
	}
	if len(res.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(res.Cases), len(want))
	}
	for _, c := range res.Cases {
		m := c.Metrics[0]
		w := want[c.CaseID]
		if m.Score == nil || *m.Score != w.score || m.Reason != w.reason || m.Status != "passed" {
			t.Errorf("case %s: %s score %v reason %q, want passed %v %q", c.CaseID, m.Status, m.Score, m.Reason, w.score, w.reason)
		}
	}
}
