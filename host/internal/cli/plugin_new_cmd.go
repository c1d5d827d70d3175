package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	csdk "github.com/agentanvil/anvil/sdk/c"
)

// scaffoldsFS holds one project template per language:
// scaffolds/<lang>/**. Every file is a text/template (see scaffoldData); a
// name ending in ".tmpl" loses the suffix, a path component "__NAME__"
// becomes the plugin's name, and build.sh is written executable. The
// directory is embedded whole ("all:" keeps names starting with _ or .),
// so a language whose directory is missing only fails at run time.
//
//go:embed all:scaffolds
var scaffoldsFS embed.FS

// scaffoldLangs are the languages `plugin new` knows, in help order.
var scaffoldLangs = []struct{ name, what string }{
	{"go", "Wasm module from Go with sdk/ (needs the Go toolchain)"},
	{"c", "Wasm module from C with sdk/c/anvil.h (clang, wasi-libc)"},
	{"assemblyscript", "Wasm module from AssemblyScript with sdk/assemblyscript (node, npm)"},
	{"python", "process plugin (a zipapp) with sdk/python (python3, grpcio)"},
}

// AnvilModule is the Go module path of this repository.
const AnvilModule = "github.com/agentanvil/anvil"

// scaffoldData is what a scaffold's templates see.
type scaffoldData struct {
	Name        string // the plugin name, [a-z][a-z0-9_-]*
	Kind        string // the kind: Name with '-' replaced by '_'
	AnvilModule string // github.com/agentanvil/anvil
	sdkSource
}

// sdkSource is where a scaffold's build gets the Anvil SDK: at most one
// of the two is set.
type sdkSource struct {
	// AnvilDir is the absolute path of an Anvil checkout (a Go project's
	// go.mod replaces the module by it; a Python project's build.sh takes
	// the SDK from it).
	AnvilDir string
	// AnvilVersion is a version of the module a proxy serves: this
	// binary's own (a Go project's go.mod requires it).
	AnvilVersion string
}

var scaffoldName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

func newPluginNewCmd() *cobra.Command {
	var lang, dir, anvilDir string
	var force bool
	var list, names []string
	for _, l := range scaffoldLangs {
		names = append(names, l.name)
		list = append(list, fmt.Sprintf("  %-15s %s", l.name, l.what))
	}
	cmd := &cobra.Command{
		Use:   "new NAME --lang LANG",
		Short: "Write a buildable plugin project: source, build.sh, anvil.yaml, cases",
		Long: `Write a new plugin project for NAME into ./NAME (or --dir): the source of
a deterministic keyword_coverage metric kind named after the plugin (NAME
with '-' replaced by '_'), build.sh, a README, three test cases and an
anvil.yaml that pins the built artifact by sha256_file. With no edits,

  cd NAME && ./build.sh && anvil-host plugin test ARTIFACT && anvil-host run

all exit 0; the README names ARTIFACT. Languages:

` + strings.Join(list, "\n") + `

NAME is lower case: a letter, then letters, digits, '_' or '-'. A target
directory that exists and is not empty is refused (exit 2) unless --force
is given, which overwrites the scaffold's files and leaves others alone.

Where the scaffold's build gets the Anvil SDK, first found: --anvil-dir,
$ANVIL_DIR, the checkout holding this binary (bin/anvil-host) — a Go
project then replaces the module by that checkout — else this binary's own
module version when "go install github.com/agentanvil/anvil/cmd/anvil-host@VERSION"
built it: a Go project requires that version, so the plugin builds against
the SDK of the host that runs it; else a checkout holding the current
directory; else the version stamped in a release binary. With none of
these the Go project requires no version and its build takes the latest
release.
Python projects use an installed anvil-plugin-sdk unless a checkout is
known.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !scaffoldName.MatchString(name) {
				return usageErr(fmt.Errorf("plugin name %q: want a lower-case letter, then [a-z0-9_-]", name))
			}
			if !slices.Contains(names, lang) {
				return usageErr(fmt.Errorf("--lang %q: want one of %s", lang, strings.Join(names, ", ")))
			}
			if dir == "" {
				dir = name
			}
			if anvilDir != "" && !isAnvilDir(anvilDir) {
				return usageErr(fmt.Errorf("--anvil-dir %s: not a checkout of %s (no go.mod declaring it)", anvilDir, AnvilModule))
			}
			exe, err := os.Executable()
			if err != nil {
				exe = ""
			}
			wd, err := os.Getwd()
			if err != nil {
				wd = ""
			}
			src, err := findSDK(anvilDir, os.Getenv, exe, wd, readBuildInfo())
			if err != nil {
				return err
			}
			data := scaffoldData{Name: name, Kind: strings.ReplaceAll(name, "-", "_"), AnvilModule: AnvilModule, sdkSource: src}
			files, err := renderScaffold(lang, data)
			if err != nil {
				return err
			}
			if err := checkTarget(dir, force); err != nil {
				return err
			}
			for _, f := range files {
				p := filepath.Join(dir, filepath.FromSlash(f.path))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, f.body, f.mode); err != nil {
					return err
				}
				if err := os.Chmod(p, f.mode); err != nil { // WriteFile keeps an existing file's mode
					return err
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote %d files for plugin %s (%s) into %s", len(files), name, lang, dir)
			switch {
			case src.AnvilDir != "":
				fmt.Fprintf(out, ", using the Anvil checkout at %s", src.AnvilDir)
			case src.AnvilVersion != "" && lang == "go":
				fmt.Fprintf(out, ", requiring %s %s (this anvil-host's version)", AnvilModule, src.AnvilVersion)
			}
			fmt.Fprintf(out, "\nnext: cd %s && ./build.sh && anvil-host run   (README.md says more)\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "", "language: "+strings.Join(names, ", "))
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write (default ./NAME)")
	cmd.Flags().StringVar(&anvilDir, "anvil-dir", "", "Anvil checkout the project uses for its SDK (default: found automatically)")
	cmd.Flags().BoolVar(&force, "force", false, "write into a non-empty directory, overwriting the scaffold's files")
	_ = cmd.MarkFlagRequired("lang")
	_ = cmd.RegisterFlagCompletionFunc("lang", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

type scaffoldFile struct {
	path string // slash-separated, relative to the project
	body []byte
	mode os.FileMode
}

// renderScaffold renders every file of scaffolds/<lang>.
func renderScaffold(lang string, data scaffoldData) ([]scaffoldFile, error) {
	root := "scaffolds/" + lang
	var files []scaffoldFile
	err := fs.WalkDir(scaffoldsFS, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == "__pycache__" {
				return fs.SkipDir // build leftovers, never part of a scaffold
			}
			return nil
		}
		raw, err := scaffoldsFS.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		t, err := template.New(rel).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return fmt.Errorf("scaffold %s: %w", p, err) // a build mistake
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return fmt.Errorf("scaffold %s: %w", p, err)
		}
		rel = strings.TrimSuffix(rel, ".tmpl")
		parts := strings.Split(rel, "/")
		for i, c := range parts {
			parts[i] = strings.ReplaceAll(c, "__NAME__", data.Name)
		}
		mode := os.FileMode(0o644)
		if path.Base(rel) == "build.sh" {
			mode = 0o755
		}
		files = append(files, scaffoldFile{path: strings.Join(parts, "/"), body: buf.Bytes(), mode: mode})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(files) == 0) {
		return nil, fmt.Errorf("this anvil-host has no %s scaffold (built without host/internal/cli/scaffolds/%s)", lang, lang)
	}
	if err == nil && lang == "c" {
		// The SDK's header itself, not a copy kept beside the scaffold.
		files = append(files, scaffoldFile{path: "anvil.h", body: csdk.Header, mode: 0o644})
	}
	return files, err
}

// checkTarget refuses a non-empty directory unless force.
func checkTarget(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usageErr(err)
	case len(entries) > 0 && !force:
		return usageErr(fmt.Errorf("%s exists and is not empty: plugin new never overwrites (--force writes into it, --dir writes elsewhere); nothing written", dir))
	}
	return nil
}

// findSDK says where a scaffold gets the Anvil SDK: the checkout flagDir
// (already checked), $ANVIL_DIR, the checkout holding the executable exe
// (a developer's bin/anvil-host); then the module version of a build from
// the module cache (`go install …@VERSION`, no VCS stamp) when a proxy can
// serve it: the plugin builds against the SDK of the host that runs it,
// even when written inside some checkout; then the checkout holding wd;
// then the version of a build stamped from a checkout (a release archive,
// a wheel; a developer's build may name a commit no proxy has, so a
// checkout at hand wins). The zero sdkSource means none.
func findSDK(flagDir string, getenv func(string) string, exe, wd string, bi *debug.BuildInfo) (sdkSource, error) {
	checkout := func(dir string) (sdkSource, error) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return sdkSource{}, fmt.Errorf("anvil checkout %s: %w", dir, err)
		}
		return sdkSource{AnvilDir: abs}, nil
	}
	if flagDir != "" {
		return checkout(flagDir)
	}
	if d := getenv("ANVIL_DIR"); d != "" && isAnvilDir(d) {
		return checkout(d)
	}
	if exe != "" {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		if d := checkoutAbove(filepath.Dir(exe)); d != "" {
			return checkout(d)
		}
	}
	v := requirableVersion(bi)
	if v != "" && !vcsStamped(bi) {
		return sdkSource{AnvilVersion: v}, nil
	}
	if wd != "" {
		if d := checkoutAbove(wd); d != "" {
			return checkout(d)
		}
	}
	if v != "" {
		return sdkSource{AnvilVersion: v}, nil
	}
	return sdkSource{}, nil
}

// vcsStamped reports whether the build was made in a checkout (the go
// command stamped its commit), not from the module cache.
func vcsStamped(bi *debug.BuildInfo) bool {
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return true
		}
	}
	return false
}

// checkoutAbove is the nearest of dir and its parents that is an Anvil
// checkout, or "".
func checkoutAbove(dir string) string {
	for {
		if isAnvilDir(dir) {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// isAnvilDir reports whether dir holds a go.mod declaring AnvilModule.
func isAnvilDir(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(first) == "module "+AnvilModule
}
