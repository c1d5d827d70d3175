package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// MaxDetailsBytes caps one metric result's details held for report.html;
// larger details are trimmed (a dag result loses its node outputs and
// nested details) or replaced by a note. cases/<id>.json keeps them whole.
const MaxDetailsBytes = 256 << 10

// Write writes junit.xml and report.html into dir from results.jsonl, the
// cases under cases/ and s. It streams results.jsonl rather than loading
// it — one walk for JUnit's counts and report.html's choice of cases, one
// per metric for JUnit's cases, one decoding only the chosen cases' lines
// (the first two skip the metrics' details) — so what it
// holds is one case at a time plus the MaxReportCases cases report.html
// shows, whatever the run's size.
func Write(dir string, s *engine.Summary) error { return WriteWithConfig(dir, s, "") }

// WriteWithConfig is Write for a run of the config file at configPath
// (as the run's -c named it, from the working directory): report.html's
// `anvil-host dag render` commands name it with -c, by a path from dir,
// since they are run there (beside results.jsonl), where no config is.
// An empty configPath leaves -c out.
func WriteWithConfig(dir string, s *engine.Summary, configPath string) error {
	// The counting and choosing walks read outcomes only (no details);
	// the chosen cases are then read whole, and only they.
	path := filepath.Join(dir, "results.jsonl")
	each := fileOutcomes(path)
	// The first walk reads everything before any file is created, so an
	// unreadable results.jsonl leaves no half-written report.
	counts, pick := newJUnitCounts(s), htmlPicker{limit: MaxReportCases}
	err := each(func(c *engine.CaseResult) error {
		counts.add(c)
		pick.add(c)
		return nil
	})
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "junit.xml"), func(w *bufio.Writer) error { return writeJUnit(w, counts, each) }); err != nil {
		return err
	}
	shown, err := pick.collectFile(path)
	if err != nil {
		return err
	}
	attachCases(dir, shown)
	var extras pageExtras
	extras.config = configFrom(dir, configPath)
	extras.calibration, extras.note = readCalibration(dir)
	extras.comparison, extras.compareNote = readComparison(dir, s)
	return writeFile(filepath.Join(dir, "report.html"), func(w *bufio.Writer) error { return writeHTML(w, s, shown, extras) })
}

// MaxReportCases bounds the cases report.html shows in full, so the page
// (and the memory to build it) does not grow without bound with the run:
// every case with a failure, error or skip is shown first, then passing
// cases up to the bound. The summary numbers always cover every case, and
// results.jsonl and cases/ hold them all.
const MaxReportCases = 1000

func allPassed(c engine.CaseResult) bool {
	for _, m := range c.Metrics {
		if m.Status != engine.StatusPassed {
			return false
		}
	}
	return true
}

// newFileBuffer is the buffer writeFile puts before a report's file: a
// report writes it in pieces of any size, the file sees 64 KiB writes.
func newFileBuffer(f io.Writer) *bufio.Writer { return bufio.NewWriterSize(f, 64<<10) }

func writeFile(path string, write func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	bw := newFileBuffer(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// capDetails keeps memory bounded: details over MaxDetailsBytes are
// trimmed or replaced by a note saying where the full record is.
func capDetails(kind string, d json.RawMessage) json.RawMessage {
	if len(d) <= MaxDetailsBytes {
		return d
	}
	if kind == "dag" {
		var res dag.Result
		if json.Unmarshal(d, &res) == nil {
			for i := range res.Nodes {
				res.Nodes[i].Output = capBytes(res.Nodes[i].Output, 2<<10)
				res.Nodes[i].Details = nil
			}
			for i := range res.Metrics {
				res.Metrics[i].Details = nil
			}
			if b, err := json.Marshal(&res); err == nil && len(b) <= MaxDetailsBytes {
				return b
			}
		}
	}
	b, _ := json.Marshal(map[string]string{
		"omitted": fmt.Sprintf("details of %d bytes are too large for the report; the run's cases/ directory has them", len(d)),
	})
	return b
}

// attachCases sets each result's Case from its cases/<id>.json in the
// output directory dir, trimmed to what the page shows. Only the shown
// cases' files are read. The report is best-effort here: a missing or
// unreadable case file only leaves that case without its fields, and a
// file of another case or an earlier run (another config hash) is ignored.
func attachCases(dir string, cases []engine.CaseResult) {
	for i := range cases {
		rec, err := engine.ReadCase(dir, cases[i].CaseID)
		if err != nil || rec.Case == nil || rec.CaseID != cases[i].CaseID || rec.ConfigHash != cases[i].ConfigHash {
			continue
		}
		cases[i].Case = trimCase(rec.Case)
	}
}

// trimCase caps what a case holds in memory to what the page can show.
func trimCase(c *abi.TestCase) *abi.TestCase {
	str := func(s string) string { return capBytes(s, FullTextBytes) }
	list := func(in []string) []string {
		const maxItems = 50
		var out []string
		for i, s := range in {
			if i == maxItems {
				out = append(out, fmt.Sprintf("… %d more items", len(in)-maxItems))
				break
			}
			out = append(out, capBytes(s, 8<<10))
		}
		return out
	}
	raw := func(r json.RawMessage) json.RawMessage {
		if len(r) <= 8<<10 {
			return r
		}
		b, _ := json.Marshal(fmt.Sprintf("… %d bytes of JSON omitted", len(r)))
		return b
	}
	tools := func(in []abi.ToolCall) []abi.ToolCall {
		out := make([]abi.ToolCall, len(in))
		for i, t := range in {
			out[i] = abi.ToolCall{Name: t.Name, Arguments: raw(t.Arguments), Output: raw(t.Output)}
		}
		return out
	}
	out := &abi.TestCase{ID: c.ID, Input: str(c.Input), ActualOutput: str(c.ActualOutput), ExpectedOutput: str(c.ExpectedOutput),
		Context: list(c.Context), RetrievalContext: list(c.RetrievalContext),
		ToolsCalled: tools(c.ToolsCalled), ExpectedTools: tools(c.ExpectedTools)}
	if len(c.Extra) > 0 {
		out.Extra = make(map[string]json.RawMessage, len(c.Extra))
		for k, v := range c.Extra {
			out.Extra[k] = raw(v)
		}
	}
	return out
}

// configFrom is configPath as a path from dir: relative when there is
// one (the output directory and its config move together, as a CI
// artifact or a copied tree), else absolute, else as given.
func configFrom(dir, configPath string) string {
	if configPath == "" {
		return ""
	}
	absConfig, err1 := filepath.Abs(configPath)
	absDir, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return configPath
	}
	if rel, err := filepath.Rel(absDir, absConfig); err == nil {
		return rel
	}
	return absConfig
}
