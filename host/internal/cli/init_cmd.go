package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// templatesFS holds the starting points `init` writes: templates/<name>/
// anvil.yaml and cases.jsonl. Each anvil.yaml is commented for a first
// reader and passes `validate` as written (TestInitTemplates).
//
//go:embed templates
var templatesFS embed.FS

// initTemplate is one starting point.
type initTemplate struct {
	name, what string
}

// initTemplates in the order help lists them; the first is the default.
var initTemplates = []initTemplate{
	{"geval", "G-Eval: criteria or evaluation steps, a logprob-weighted 0-10 score"},
	{"dag", "a DAG metric of task, binary and choice nodes (first-party kinds, no plugin to build)"},
	{"rag", "answer relevancy and faithfulness over a retrieval context"},
}

// initFiles are the files every template has, in the order written.
var initFiles = []string{"anvil.yaml", "cases.jsonl"}

func newInitCmd() *cobra.Command {
	var tmpl, dir string
	var force bool
	var names, list []string
	for _, t := range initTemplates {
		names = append(names, t.name)
		list = append(list, fmt.Sprintf("  %-6s %s", t.name, t.what))
	}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented anvil.yaml and a small dataset to start from",
		Long: `Write anvil.yaml (commented: what each key does, how to run it) and
cases.jsonl (a few cases, one of them deliberately bad) for a starting point:

` + strings.Join(list, "\n") + `

Files that exist are never overwritten unless --force is given: init then
exits 2 naming them and writes nothing. Every template uses first-party
kinds only, so nothing needs building; the judge is OpenAI's (or any
OpenAI-compatible server's) through $OPENAI_API_KEY. Without a key a run
verifies nothing and exits 3, saying how to set one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(names, tmpl) {
				return usageErr(fmt.Errorf("--template %q: want one of %s", tmpl, strings.Join(names, ", ")))
			}
			written, err := writeTemplate(tmpl, dir, force)
			if err != nil {
				return err
			}
			printNext(cmd.OutOrStdout(), tmpl, dir, written)
			return nil
		},
	}
	cmd.Flags().StringVarP(&tmpl, "template", "t", initTemplates[0].name, "starting point: "+strings.Join(names, ", "))
	cmd.Flags().StringVarP(&dir, "dir", "d", ".", "directory to write into (created if missing)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite anvil.yaml and cases.jsonl when they exist")
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.RegisterFlagCompletionFunc("template", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, t := range initTemplates {
			out = append(out, cobra.CompletionWithDesc(t.name, t.what))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// writtenFile is one file init wrote.
type writtenFile struct {
	path  string
	cases int // lines of a dataset; 0 for the config
}

// writeTemplate writes the template's files into dir. Unless force, it
// first checks that none exists, so it writes all or nothing.
func writeTemplate(tmpl, dir string, force bool) ([]writtenFile, error) {
	if !force {
		var exist []string
		for _, f := range initFiles {
			p := filepath.Join(dir, f)
			if _, err := os.Lstat(p); err == nil {
				exist = append(exist, p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, usageErr(err)
			}
		}
		if len(exist) > 0 {
			verb := "exists"
			if len(exist) > 1 {
				verb = "exist"
			}
			return nil, usageErr(fmt.Errorf("%s already %s: init never overwrites (--force replaces, --dir writes elsewhere); nothing written",
				strings.Join(exist, " and "), verb))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usageErr(err)
	}
	var out []writtenFile
	for _, f := range initFiles {
		b, err := templatesFS.ReadFile("templates/" + tmpl + "/" + f)
		if err != nil {
			return nil, err // a template without the file: a build mistake
		}
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, usageErr(err)
		}
		w := writtenFile{path: p}
		if strings.HasSuffix(f, ".jsonl") {
			w.cases = bytes.Count(bytes.TrimSpace(b), []byte("\n")) + 1
		}
		out = append(out, w)
	}
	return out, nil
}

// printNext says what was written and what to do next: without a key a
// run exits 3, so the key comes first.
func printNext(w io.Writer, tmpl, dir string, written []writtenFile) {
	for _, f := range written {
		if f.cases > 0 {
			fmt.Fprintf(w, "wrote %s (%d cases)\n", f.path, f.cases)
		} else {
			fmt.Fprintf(w, "wrote %s (template %s)\n", f.path, tmpl)
		}
	}
	c := ""
	if filepath.Clean(dir) != "." {
		c = " -c " + filepath.Join(dir, "anvil.yaml")
	}
	fmt.Fprint(w, "\nnext: set OPENAI_API_KEY (the judge's key; or OPENAI_BASE_URL for a local\n"+
		"OpenAI-compatible server, ANVIL_JUDGE_MODEL for its model), then\n")
	steps := [][2]string{
		{"validate", "checks config and dataset, calls nothing"},
		{"estimate", "judge calls, tokens and USD, calls nothing"},
		{"run", "evaluates; results in anvil-results/"},
	}
	for _, s := range steps {
		fmt.Fprintf(w, "  %-*s  # %s\n", len("anvil-host validate"+c), "anvil-host "+s[0]+c, s[1])
	}
	fmt.Fprintln(w, "Without a key the run verifies nothing and exits 3.")
}
