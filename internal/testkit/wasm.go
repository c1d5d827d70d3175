package testkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A test that needs a Go Wasm guest builds it with BuildGuest, never with
// a go command of its own: a guest built with other flags (no -trimpath,
// cgo allowed, the caller's -race) has other bytes, so another digest,
// than the module scripts/build-plugins gives users, and the test would
// pin and judge bytes nobody ships. TestGuestMatchesBuildPlugins holds
// BuildGuest to the script; TestNoTestBuildsGuestsItself holds the tests
// to BuildGuest.

// instrumentFlags are the go flags that instrument the host's test
// binary: wasip1 supports none of them, and a guest is not what they
// were set for.
var instrumentFlags = map[string]bool{"race": true, "cover": true, "covermode": true, "coverpkg": true, "msan": true, "asan": true}

// GuestGoflags is goflags (a GOFLAGS value) for building a guest: without
// the flags that instrument the test binary (-race, -cover, -covermode,
// -coverpkg, -msan, -asan), with every other (-mod, -modcacherw, -tags…)
// kept, since those say how to build at all.
func GuestGoflags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !instrumentFlags[name] {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// GoWasip1 is the go command with args for GOOS=wasip1 GOARCH=wasm
// CGO_ENABLED=0, GOFLAGS as GuestGoflags makes it: what
// scripts/build-plugins sets, for tests that build a wasip1 program that
// is not a plugin (a command).
func GoWasip1(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="+GuestGoflags(os.Getenv("GOFLAGS")))
	return cmd
}

// BuildGuest builds the wasip1 plugin package in directory pkg (absolute,
// or relative to the working directory) to the file out exactly as
// scripts/build-plugins does, and returns its digest as a config pins
// it, "sha256:<hex>".
func BuildGuest(ctx context.Context, pkg, out string) (string, error) {
	if !filepath.IsAbs(pkg) && !strings.HasPrefix(pkg, ".") {
		pkg = "./" + pkg // a directory, not an import path
	}
	cmd := GoWasip1(ctx, "build", "-trimpath", "-buildmode=c-shared", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build guest %s: %w\n%s", pkg, err, b)
	}
	return FileDigest(out)
}

// FileDigest is the sha256 of the file at path, "sha256:<hex>".
func FileDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("digest of a built guest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// goTool is the go command: the one on PATH (go test puts its own
// GOROOT's first), else GOROOT's.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}
