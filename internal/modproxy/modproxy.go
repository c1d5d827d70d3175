// Package modproxy writes module versions into a directory laid out as a
// Go module proxy serves them (the GOPROXY protocol: <module>/@v/list,
// <version>.info, .mod and .zip), so that GOPROXY=file://DIR lets the go
// command install and require a version that was never published — the
// whole outside-a-checkout flow, tested offline.
//
// Invariants:
//   - A version's zip is made by golang.org/x/mod/zip from the files `git
//     archive` gives for a revision (as the go command reads a
//     repository), so it holds exactly the files a real proxy would serve
//     for a tag on that commit, checked against the same rules; its .mod is
//     that revision's go.mod, byte for byte.
//   - A version never changes: writing one the directory already serves
//     with other content is an error, and nothing of it is replaced.
//   - Every file appears whole (written beside, then renamed), and @v/list
//     stays sorted by semver, without pseudo-versions (as the protocol
//     says).
package modproxy

import (
	stdzip "archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// Info is a version's .info document.
type Info struct {
	Version string
	Time    time.Time
}

// AddFromGit writes m into the proxy directory root, made from revision
// rev of the git work tree repoRoot, whose root holds m's go.mod.
func AddFromGit(ctx context.Context, root, repoRoot, rev string, m module.Version) error {
	if err := checkVersion(m); err != nil {
		return err
	}
	repoRoot, err := filepath.Abs(repoRoot)
	if err != nil {
		return fmt.Errorf("module %s: %w", m, err)
	}
	commit, err := git(ctx, repoRoot, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return fmt.Errorf("module %s: revision %q: %w", m, rev, err)
	}
	commit = strings.TrimSpace(commit)
	when, err := git(ctx, repoRoot, "show", "-s", "--format=%cI", commit)
	if err != nil {
		return fmt.Errorf("module %s: commit time of %s: %w", m, commit, err)
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(when))
	if err != nil {
		return fmt.Errorf("module %s: commit time of %s: %w", m, commit, err)
	}
	gomod, err := git(ctx, repoRoot, "show", commit+":go.mod")
	if err != nil {
		return fmt.Errorf("module %s: go.mod at %s: %w", m, commit, err)
	}
	if p := modfile.ModulePath([]byte(gomod)); p != m.Path {
		return fmt.Errorf("module %s: go.mod at %s of %s declares module %q", m, shortHash(commit), repoRoot, p)
	}
	files, err := gitFiles(ctx, repoRoot, commit)
	if err != nil {
		return fmt.Errorf("module %s: files of %s: %w", m, shortHash(commit), err)
	}
	var z bytes.Buffer
	if err := zip.Create(&z, m, files); err != nil {
		return fmt.Errorf("module %s: zip from %s: %w", m, shortHash(commit), err)
	}
	return Add(root, m, Info{Version: m.Version, Time: t.UTC()}, []byte(gomod), z.Bytes())
}

// gitFiles is the tree of commit as `git archive` writes it, the way the
// go command reads a repository (line endings as committed). It is what
// zip.CreateFromVCS reads, which refuses a linked work tree (git worktree
// add: .git is a file there).
func gitFiles(ctx context.Context, repoRoot, commit string) ([]zip.File, error) {
	out, err := git(ctx, repoRoot, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", commit)
	if err != nil {
		return nil, err
	}
	zr, err := stdzip.NewReader(strings.NewReader(out), int64(len(out)))
	if err != nil {
		return nil, fmt.Errorf("git archive: %w", err)
	}
	var files []zip.File
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			files = append(files, archived{f})
		}
	}
	return files, nil
}

// archived is a file of a `git archive` zip, as golang.org/x/mod/zip
// reads files.
type archived struct{ f *stdzip.File }

func (a archived) Path() string                 { return a.f.Name }
func (a archived) Lstat() (fs.FileInfo, error)  { return a.f.FileInfo(), nil }
func (a archived) Open() (io.ReadCloser, error) { return a.f.Open() }

// Add writes m's .info, .mod and .zip into the proxy directory root and
// lists the version.
func Add(root string, m module.Version, info Info, gomod, modzip []byte) error {
	if err := checkVersion(m); err != nil {
		return err
	}
	if info.Version != m.Version {
		return fmt.Errorf("module %s: info names version %q", m, info.Version)
	}
	dir, err := versionDir(root, m.Path)
	if err != nil {
		return err
	}
	ev, err := module.EscapeVersion(m.Version)
	if err != nil {
		return fmt.Errorf("module %s: %w", m, err)
	}
	infoJSON, err := json.Marshal(info, json.Deterministic(true))
	if err != nil {
		return fmt.Errorf("module %s: info: %w", m, err)
	}
	files := []struct {
		name string
		data []byte
	}{{ev + ".mod", gomod}, {ev + ".zip", modzip}, {ev + ".info", infoJSON}}
	// Check all before writing any: a version is served whole or not at all.
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(dir, f.name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("module %s: %w", m, err)
		case !bytes.Equal(have, f.data):
			return fmt.Errorf("module %s: %s already holds %s with other content: a proxy never changes a version", m, dir, f.name)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("module %s: %w", m, err)
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.data); err != nil {
			return fmt.Errorf("module %s: %w", m, err)
		}
	}
	if module.IsPseudoVersion(m.Version) {
		return nil
	}
	list, err := List(root, m.Path)
	if err != nil {
		return err
	}
	list = append(list, m.Version)
	semver.Sort(list)
	var b strings.Builder
	for i, v := range list {
		if i > 0 && v == list[i-1] {
			continue
		}
		b.WriteString(v + "\n")
	}
	if err := writeFile(filepath.Join(dir, "list"), []byte(b.String())); err != nil {
		return fmt.Errorf("module %s: %w", m, err)
	}
	return nil
}

// List is the versions @v/list of path names, in its order.
func List(root, path string) ([]string, error) {
	dir, err := versionDir(root, path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "list"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", path, err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if v := strings.TrimSpace(line); v != "" {
			out = append(out, v)
		}
	}
	return out, nil
}

// checkVersion accepts what a go.mod can require: a canonical semantic
// version matching the path's major version, without build metadata.
func checkVersion(m module.Version) error {
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	if semver.Canonical(m.Version) != m.Version {
		return fmt.Errorf("module %s: version %q is not canonical (want %q, and no +build metadata)", m.Path, m.Version, semver.Canonical(m.Version))
	}
	return nil
}

// versionDir is <root>/<escaped path>/@v.
func versionDir(root, path string) (string, error) {
	ep, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(ep), "@v"), nil
}

func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
