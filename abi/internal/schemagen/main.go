// Command schemagen writes the JSON Schemas of the ABI v1 messages to
// abi/v1/schema/ (gen.Dir), generated from the Go types in package abi.
//
// Usage, from anywhere inside the module:
//
//	go run ./abi/internal/schemagen          # write abi/v1/schema/*.json
//	go run ./abi/internal/schemagen -check   # exit 1 if they are out of date
//
// (or `go generate ./abi`). The test TestSchemasUpToDate in package abi
// fails when the committed files differ from what this command writes.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentanvil/anvil/abi/internal/schemagen/gen"
)

const module = "github.com/agentanvil/anvil"

func main() {
	out := flag.String("out", "", "output directory (default: <module root>/"+gen.Dir+")")
	check := flag.Bool("check", false, "do not write; exit 1 when a file is missing or differs")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(out string, check bool) error {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, filepath.FromSlash(gen.Dir))
	}
	files, err := gen.Generate()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	var stale []string
	for _, f := range files {
		want[f.Name] = true
		path := filepath.Join(out, f.Name)
		have, err := os.ReadFile(path)
		if err == nil && bytes.Equal(have, f.Data) {
			continue
		}
		if check {
			stale = append(stale, path)
			continue
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	// A schema file no message produces any more is stale too.
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !want[e.Name()] {
			path := filepath.Join(out, e.Name())
			if check {
				stale = append(stale, path+" (no longer generated)")
				continue
			}
			if err := os.Remove(path); err != nil {
				return err
			}
			fmt.Println("removed", path)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date: %s; run `go run ./abi/internal/schemagen`", strings.Join(stale, ", "))
	}
	return nil
}

// moduleRoot walks up from the working directory to the go.mod of module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(b) == module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside module %s; pass -out", module)
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
