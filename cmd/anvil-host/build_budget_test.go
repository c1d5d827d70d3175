package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/internal/godeps"
)

// README's main command compiles anvil-host and the textcheck plugin from
// source, and its budget is 90 s cold on a 2-core machine (bench/README.md,
// "Budgets"). How long
// a cold build takes depends on the machine, so CI cannot time it; what
// it depends on in the code is what the build compiles. These budgets
// hold that, as the allocation budgets hold CPU: a new module, or a
// package count past the budget, fails here and is a decision to measure
// (bench/README.md, "First run"), not a drift noticed months later.
// bench/README.md, "Budgets", has the counts the budgets were set from.
const (
	// maxHostPackages: packages anvil-host links, standard library included
	// (+5 when host/internal/plugin was split into its transports: the
	// same code in five packages, transport, wasm, process, inproc and
	// internal/testknobs, no new dependency; +1 for host/internal/stall,
	// about a hundred lines of the host's own, no new dependency).
	maxHostPackages = 846
	// maxQuickstartPluginPackages: packages textcheck's Wasm build links.
	maxQuickstartPluginPackages = 100
)

func TestBuildBudget(t *testing.T) {
	host := godeps.List(t, nil, ".")
	t.Logf("anvil-host links %d packages (budget %d)", len(host), maxHostPackages)
	if len(host) > maxHostPackages {
		t.Errorf("anvil-host links %d packages, over the budget of %d: a longer cold first build (README's main command)", len(host), maxHostPackages)
	}

	var linked []string
	for _, d := range host {
		if d.Module != "" {
			linked = append(linked, d.Module)
		}
	}
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

	wasm := godeps.List(t, []string{"GOOS=wasip1", "GOARCH=wasm"}, "../../examples/plugins/textcheck/wasm")
	t.Logf("the quickstart's plugin links %d packages (budget %d)", len(wasm), maxQuickstartPluginPackages)
	if len(wasm) > maxQuickstartPluginPackages {
		t.Errorf("textcheck's Wasm build links %d packages, over the budget of %d: a longer cold first build (README's main command)", len(wasm), maxQuickstartPluginPackages)
	}
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
