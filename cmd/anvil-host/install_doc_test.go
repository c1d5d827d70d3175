package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeInstallsAsTested: README's first install line is go install of
// this command, and scripts/install-e2e runs that same command (with a
// version its file-based proxy serves) and installs the wheel README's pip
// line names.
func TestReadmeInstallsAsTested(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, install, ok := strings.Cut(string(readme), "\n## Install\n")
	if !ok {
		t.Fatal("README has no Install section")
	}
	_, block, ok := strings.Cut(install, "```sh\n")
	if !ok {
		t.Fatal("README's Install section has no sh block")
	}
	lines := strings.Split(block, "\n")
	const goInstall = "go install github.com/agentanvil/anvil/cmd/anvil-host@"
	if !strings.HasPrefix(lines[0], goInstall) {
		t.Errorf("README's first install line is %q, want %s…", lines[0], goInstall)
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "pip install anvil-eval ") {
		t.Errorf("README's second install line is %q, want pip install anvil-eval", lines[1])
	}
	e2e, err := os.ReadFile("../../scripts/install-e2e")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`go install "github.com/agentanvil/anvil/cmd/anvil-host@$v"`, `"$tmp"/wheels/anvil_eval-*.whl`} {
		if !strings.Contains(string(e2e), want) {
			t.Errorf("scripts/install-e2e does not run %s", want)
		}
	}
}
