// Command modproxy serves a revision of this repository as a module
// version from a directory, for GOPROXY=file://DIR:
//
//	go run ./internal/cmd/modproxy -o DIR -version v0.1.0 [-rev HEAD] [-repo .]
//
// The module path is the one the revision's go.mod declares. Nothing is
// published: scripts/install-e2e uses it to run `go install …@VERSION` and
// `plugin new --lang go` against a version no proxy has yet.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/agentanvil/anvil/internal/modproxy"
)

func main() {
	out := flag.String("o", "", "proxy directory to write into (created)")
	version := flag.String("version", "", "module version to serve, e.g. v0.1.0")
	rev := flag.String("rev", "HEAD", "git revision the version is made from")
	repo := flag.String("repo", ".", "git work tree whose root holds the module's go.mod")
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -o DIR -version VERSION [-rev REV] [-repo DIR]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *repo, *rev, *version); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, repo, rev, version string) error {
	gomod, err := exec.CommandContext(ctx, "git", "-C", repo, "show", rev+":go.mod").Output()
	if err != nil {
		return fmt.Errorf("read go.mod at %s in %s: %w", rev, repo, err)
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("go.mod at %s in %s declares no module", rev, repo)
	}
	m := module.Version{Path: path, Version: version}
	if err := modproxy.AddFromGit(ctx, out, repo, rev, m); err != nil {
		return err
	}
	list, err := modproxy.List(out, path)
	if err != nil {
		return err
	}
	fmt.Printf("%s serves %s (from %s); listed: %s\n", out, m, rev, strings.Join(list, " "))
	return nil
}
