package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// README's main command compiles anvil-host and the textcheck plugin from
// source, and issue 13 holds it to 90 s cold on a 2-core machine. How long
// a cold build takes depends on the machine, so CI cannot time it; what
// it depends on in the code is what the build compiles. These budgets
// hold that, as the allocation budgets hold CPU: a new module, or a
// package count past the budget, fails here and is a decision to measure
// (bench/README.md, "First run"), not a drift noticed months later.
const (
	// maxHostPackages: 550 packages at 95c77b0, standard library included.
	maxHostPackages = 565
	// maxQuickstartPluginPackages: textcheck's Wasm build, 88 at 95c77b0.
	maxQuickstartPluginPackages = 100
)

func TestBuildBudget(t *testing.T) {
	pkgs := goList(t, nil, "{{.ImportPath}}", ".")
	t.Logf("anvil-host links %d packages (budget %d)", len(pkgs), maxHostPackages)
	if len(pkgs) > maxHostPackages {
		t.Errorf("anvil-host links %d packages, over the budget of %d: a longer cold first build (README's main command)", len(pkgs), maxHostPackages)
	}

	linked := goList(t, nil, "{{if .Module}}{{if not .Module.Main}}{{.Module.Path}}{{end}}{{end}}", ".")
	slices.Sort(linked)
	linked = slices.Compact(linked)
	pinned := readModuleList(t, "testdata/linked-modules.txt")
	for _, m := range linked {
		if !slices.Contains(pinned, m) {
			t.Errorf("anvil-host now links module %s, which testdata/linked-modules.txt does not list: measure what it adds to a cold build, then list it", m)
		}
	}
	for _, m := range pinned {
		if !slices.Contains(linked, m) {
			t.Errorf("testdata/linked-modules.txt lists %s, which anvil-host no longer links: take it off the list", m)
		}
	}

	wasm := goList(t, []string{"GOOS=wasip1", "GOARCH=wasm"}, "{{.ImportPath}}", "../../examples/plugins/textcheck/wasm")
	t.Logf("the quickstart's plugin links %d packages (budget %d)", len(wasm), maxQuickstartPluginPackages)
	if len(wasm) > maxQuickstartPluginPackages {
		t.Errorf("textcheck's Wasm build links %d packages, over the budget of %d: a longer cold first build (README's main command)", len(wasm), maxQuickstartPluginPackages)
	}
}

// goList is `go list -deps -f format pkg` under env, its non-empty lines.
// go test puts its own go command first in PATH.
func goList(t *testing.T, env []string, format, pkg string) []string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	cmd := exec.Command(gocmd, "list", "-deps", "-f", format, pkg)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	var lines []string
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	return lines
}

// readModuleList reads a list of module paths, one a line; # starts a
// comment.
func readModuleList(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			mods = append(mods, line)
		}
	}
	return mods
}
