//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The process transport's OS isolation as the CLI shows it, through the
// real binary (which is its own plugins' sandbox trampoline).

// nativeQuickstart is the quickstart with its Wasm plugin replaced by the
// native build of the same plugin, and extra appended to its entry.
func nativeQuickstart(t *testing.T, extra string) string {
	t.Helper()
	dir := quickstart(t)
	cfg := string(mustRead(t, filepath.Join(dir, "anvil.yaml")))
	native := strings.NewReplacer(
		wasmDir+"/textcheck.wasm.sha256", wasmDir+"/textcheck-native.sha256",
		wasmDir+"/textcheck.wasm", wasmDir+"/textcheck-native",
		"grants: {judge: false}", "grants: {judge: false}\n    transport: process"+extra,
	).Replace(cfg)
	if !strings.Contains(native, "transport: process") {
		t.Fatalf("native config not rewritten:\n%s", native)
	}
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(native), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func nativeDigest(t *testing.T) string {
	t.Helper()
	return strings.Fields(string(mustRead(t, filepath.Join(wasmDir, "textcheck-native.sha256"))))[0]
}

// TestValidateShowsIsolation: validate names each process plugin's
// isolation; `isolation: required` loads where the kernel grants it all;
// a wrong value is a config error naming the key.
func TestValidateShowsIsolation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		code  int
		want  []string
	}{
		{"default", "", 0, []string{"plugin textcheck (textcheck@", "process): isolation full", "Landlock ABI"}},
		{"required", "\n    isolation: required", 0, []string{"process): isolation full"}},
		{"wrong value", "\n    isolation: strict", 2, []string{`anvil.yaml:44: key "isolation"`, `"strict"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := nativeQuickstart(t, tc.extra)
			r := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--no-dataset")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, r.stdout, r.stderr)
				}
			}
			if tc.code == 0 && strings.Contains(r.stderr, "without full OS isolation") {
				t.Errorf("warned about isolation on a kernel that grants it all:\n%s", r.stderr)
			}
		})
	}
}

// TestPluginInspectProcess: inspect describes a native plugin only when
// its digest is pinned, and then shows its isolation.
func TestPluginInspectProcess(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	bin := filepath.Join(wasmDir, "textcheck-native")

	r := runBinary(t, dir, nil, "plugin", "inspect", bin)
	if r.code != exitVerifyFailed || !strings.Contains(r.stderr, "not a Wasm module") || !strings.Contains(r.stderr, "--sha256") {
		t.Fatalf("unpinned native plugin: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBinary(t, dir, nil, "plugin", "inspect", bin, "--sha256", nativeDigest(t))
	if r.code != 0 || !strings.Contains(r.stdout, "process") || !strings.Contains(r.stdout, "isolation     full") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBinary(t, dir, nil, "plugin", "inspect", bin, "--sha256", nativeDigest(t), "--json")
	var out struct {
		Transport string
		Isolation struct {
			Mode     string   `json:"mode"`
			Obtained []string `json:"obtained"`
			Landlock int      `json:"landlock_abi"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if out.Transport != "process" || out.Isolation.Mode != "best_effort" || len(out.Isolation.Obtained) != 11 || out.Isolation.Landlock < 1 {
		t.Errorf("isolation in JSON: %+v", out)
	}
}
