package modproxy

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/module"
)

// repo makes a git work tree holding module example.com/Hello (an upper
// case letter, so its proxy path is escaped) with one committed package,
// an untracked file and an ignored one, and returns its path and commit.
func repo(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/Hello\n\ngo 1.22\n")
	write("hello.go", "package hello\n\n// Hello is the greeting.\nconst Hello = \"hello\"\n")
	write("LICENSE", "test licence\n")
	write(".gitignore", "ignored.txt\n")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("add", ".")
	run("commit", "-q", "-m", "one")
	// Neither is in the commit, so neither may be in the module.
	write("untracked.go", "package hello\n\nconst Untracked = 1\n")
	write("ignored.txt", "local\n")
	return dir, run("rev-parse", "HEAD")
}

func TestAddFromGit(t *testing.T) {
	src, commit := repo(t)
	root := t.TempDir()
	ctx := context.Background()
	for _, v := range []string{"v0.2.0", "v0.10.0", "v0.1.0", "v0.0.0-20260102030405-" + commit[:12]} {
		if err := AddFromGit(ctx, root, src, "HEAD", module.Version{Path: "example.com/Hello", Version: v}); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	// The escaped path: upper case letters as !lower.
	dir := filepath.Join(root, "example.com", "!hello", "@v")
	list, err := List(root, "example.com/Hello")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v0.1.0", "v0.2.0", "v0.10.0"}; !slices.Equal(list, want) {
		t.Errorf("list %q, want %q (semver order, no pseudo-version)", list, want)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "v0.1.0.info"))
	if err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if info.Version != "v0.1.0" || !info.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("info %s", raw)
	}
	if mod, _ := os.ReadFile(filepath.Join(dir, "v0.1.0.mod")); string(mod) != "module example.com/Hello\n\ngo 1.22\n" {
		t.Errorf(".mod = %q", mod)
	}
	zr, err := zip.OpenReader(filepath.Join(dir, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	// Inside the zip the path is not escaped.
	want := []string{"example.com/Hello@v0.1.0/.gitignore", "example.com/Hello@v0.1.0/LICENSE",
		"example.com/Hello@v0.1.0/go.mod", "example.com/Hello@v0.1.0/hello.go"}
	if !slices.Equal(names, want) {
		t.Errorf("zip holds %q, want %q", names, want)
	}
}

// TestAddFromALinkedWorkTree: a checkout made by `git worktree add`, whose
// .git is a file, serves the same zip as the repository it links to.
func TestAddFromALinkedWorkTree(t *testing.T) {
	src, _ := repo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	if out, err := exec.Command("git", "-C", src, "worktree", "add", "-q", "--detach", linked, "HEAD").CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v\n%s", err, out)
	}
	m := module.Version{Path: "example.com/Hello", Version: "v0.1.0"}
	a, b := t.TempDir(), t.TempDir()
	ctx := context.Background()
	if err := AddFromGit(ctx, a, src, "HEAD", m); err != nil {
		t.Fatal(err)
	}
	if err := AddFromGit(ctx, b, linked, "HEAD", m); err != nil {
		t.Fatalf("from the linked work tree: %v", err)
	}
	za, _ := os.ReadFile(filepath.Join(a, "example.com", "!hello", "@v", "v0.1.0.zip"))
	zb, _ := os.ReadFile(filepath.Join(b, "example.com", "!hello", "@v", "v0.1.0.zip"))
	if len(za) == 0 || !bytes.Equal(za, zb) {
		t.Fatalf("zips differ: %d and %d bytes", len(za), len(zb))
	}
}

// TestGoCommandInstallsFromIt: the go command itself, offline, fetches,
// verifies and builds against the version, in a clean module cache.
func TestGoCommandInstallsFromIt(t *testing.T) {
	src, _ := repo(t)
	root := t.TempDir()
	if err := AddFromGit(context.Background(), root, src, "HEAD", module.Version{Path: "example.com/Hello", Version: "v1.2.3"}); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module user\n\ngo 1.22\n\nrequire example.com/Hello v1.2.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nimport hello \"example.com/Hello\"\n\nfunc main() { println(hello.Hello) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(root), "GOSUMDB=off", "GOFLAGS=-modcacherw",
		"GOPATH="+gopath, "GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	cmd = exec.Command("go", "run", ".")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-modcacherw", "GOPATH="+gopath,
		"GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(work, "go.sum"))
	if err != nil || !bytes.Contains(sum, []byte("example.com/Hello v1.2.3 h1:")) {
		t.Fatalf("go.sum lacks the module's hash: %v\n%s", err, sum)
	}
}

func TestAddRefuses(t *testing.T) {
	src, _ := repo(t)
	root := t.TempDir()
	ctx := context.Background()
	m := module.Version{Path: "example.com/Hello", Version: "v0.1.0"}
	if err := AddFromGit(ctx, root, src, "HEAD", m); err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile(filepath.Join(root, "example.com", "!hello", "@v", "v0.1.0.info"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		add  func() error
		want string
	}{
		{"build metadata", func() error {
			return AddFromGit(ctx, root, src, "HEAD", module.Version{Path: m.Path, Version: "v0.2.0+dirty"})
		}, "not canonical"},
		{"not semver", func() error {
			return AddFromGit(ctx, root, src, "HEAD", module.Version{Path: m.Path, Version: "0.2.0"})
		}, "not a semantic version"},
		{"major without /v2", func() error {
			return AddFromGit(ctx, root, src, "HEAD", module.Version{Path: m.Path, Version: "v2.0.0"})
		}, "invalid version"},
		{"another module's go.mod", func() error {
			return AddFromGit(ctx, root, src, "HEAD", module.Version{Path: "example.com/other", Version: "v0.1.0"})
		}, `declares module "example.com/Hello"`},
		{"no such revision", func() error {
			return AddFromGit(ctx, root, src, "no-such-branch", module.Version{Path: m.Path, Version: "v0.3.0"})
		}, `revision "no-such-branch"`},
		{"a served version with other content", func() error {
			return Add(root, m, Info{Version: m.Version, Time: time.Unix(0, 0)}, []byte("module example.com/Hello\n"), []byte("zip"))
		}, "a proxy never changes a version"},
		{"info for another version", func() error {
			return Add(root, module.Version{Path: m.Path, Version: "v0.4.0"}, Info{Version: "v0.5.0"}, nil, nil)
		}, `info names version "v0.5.0"`},
	} {
		err := tc.add()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// The refusals left the served version as it was.
	if again, _ := os.ReadFile(filepath.Join(root, "example.com", "!hello", "@v", "v0.1.0.info")); !bytes.Equal(again, info) {
		t.Errorf("info changed: %s → %s", info, again)
	}
	if list, _ := List(root, m.Path); !slices.Equal(list, []string{"v0.1.0"}) {
		t.Errorf("list %q after refusals", list)
	}
	// The same version from the same commit again is not a change.
	if err := AddFromGit(ctx, root, src, "HEAD", m); err != nil {
		t.Errorf("re-adding the same content: %v", err)
	}
}
