// Package godeps lists what Go packages link, for the tests that hold a
// build's dependencies: what parsing a config links, what package score
// links, what anvil-host and the quickstart's plugin compile. It runs the
// go command that go test puts first in PATH, and only tests import it.
package godeps

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Dep is one package a build links.
type Dep struct {
	Path string
	Std  bool // in the standard library
	// Module is the path of the module the package is in, "" for the
	// standard library and for the main module (this repository).
	Module string
}

// List is `go list -deps pkgs...` with env added to the environment (for
// example GOOS=wasip1): every package pkgs link, themselves included. It
// skips t when there is no go command, and fails it when go list fails or
// lists nothing.
func List(t testing.TB, env []string, pkgs ...string) []Dep {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	const format = "{{.ImportPath}} {{.Standard}} {{if .Module}}{{if not .Module.Main}}{{.Module.Path}}{{end}}{{end}}"
	args := append([]string{"list", "-deps", "-f", format}, pkgs...)
	cmd := exec.Command(gocmd, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, stderr)
	}
	var deps []Dep
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		d := Dep{Path: fields[0], Std: fields[1] == "true"}
		if len(fields) > 2 {
			d.Module = fields[2]
		}
		deps = append(deps, d)
	}
	if len(deps) == 0 {
		t.Fatalf("go list -deps %v listed nothing", pkgs)
	}
	return deps
}
