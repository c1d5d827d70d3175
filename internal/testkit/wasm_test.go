package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestGuestGoflags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"-race", ""},
		{"--race -mod=mod", "-mod=mod"},
		{"-race=true -modcacherw", "-modcacherw"},
		{"-cover -covermode=atomic -coverpkg=./... -tags=x", "-tags=x"},
		{"-msan -asan -trimpath", "-trimpath"},
		{"-mod=vendor  -buildvcs=false", "-mod=vendor -buildvcs=false"},
		{"-racy", "-racy"}, // another flag, not -race
	} {
		if got := GuestGoflags(tc.in); got != tc.want {
			t.Errorf("GuestGoflags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A guest BuildGuest builds has the bytes scripts/build-plugins gives
// users for the same package, built from another working directory and
// spelled another way, whatever GOFLAGS the tests run under.
func TestGuestMatchesBuildPlugins(t *testing.T) {
	Long(t, "builds Wasm guests twice")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	script := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "build-plugins"), "textcheck", "zoo-judge")
	script.Env = append(os.Environ(), "OUT="+out, "GOFLAGS="+GuestGoflags(os.Getenv("GOFLAGS")))
	if b, err := script.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-plugins: %v\n%s", err, b)
	}
	for name, pkg := range map[string]string{
		"textcheck": filepath.Join(root, "examples", "plugins", "textcheck", "wasm"),
		"zoo-judge": "../../host/internal/plugin/testdata/zoo/judge",
	} {
		want, err := os.ReadFile(filepath.Join(out, name+".wasm.sha256"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := BuildGuest(t.Context(), pkg, filepath.Join(t.TempDir(), name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if got != strings.TrimSpace(string(want)) {
			t.Errorf("%s: BuildGuest gives %s, scripts/build-plugins %s", name, got, strings.TrimSpace(string(want)))
		}
	}
}

// No Go file outside this package builds a Wasm guest with a go command
// of its own: one that does drifts from scripts/build-plugins' flags.
func TestNoTestBuildsGuestsItself(t *testing.T) {
	root := filepath.Join("..", "..")
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var offenders []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			abs, _ := filepath.Abs(path)
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules") || abs == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if why := buildsGuest(t, path); why != "" {
			offenders = append(offenders, path+": "+why)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(offenders) > 0 {
		t.Errorf("build Wasm guests with testkit.BuildGuest (or GoWasip1), as scripts/build-plugins does:\n%s", strings.Join(offenders, "\n"))
	}
}

// buildsGuest says how the Go file at path builds for wasip1 by itself,
// or "": a "-buildmode=c-shared" literal, or an exec.Command(Context)
// running "build" in a file that sets GOOS=wasip1.
func buildsGuest(t *testing.T, path string) string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var cShared, wasip1, goBuild bool
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil {
				cShared = cShared || strings.Contains(s, "-buildmode=c-shared")
				wasip1 = wasip1 || strings.Contains(s, "GOOS=wasip1")
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Command" || sel.Sel.Name == "CommandContext") {
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Value == `"build"` {
						goBuild = true
					}
				}
			}
		}
		return true
	})
	switch {
	case cShared:
		return `a "-buildmode=c-shared" literal`
	case wasip1 && goBuild:
		return "runs go build with GOOS=wasip1"
	}
	return ""
}
