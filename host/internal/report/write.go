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
	"github.com/agentanvil/anvil/host/internal/results"
)

// MaxDetailsBytes caps one metric result's details held for report.html;
// larger details are trimmed (a dag result loses its node outputs and
// nested details) or replaced by a note. cases/<id>.json keeps them whole.
const MaxDetailsBytes = 256 << 10

// Builder builds a run's junit.xml and report.html from its cases as it
// is given them (a results.Sink): during a run, from the results writer
// as each case becomes durable (engine.RunOptions.Sink); from an output
// directory, from one read of its results.jsonl (Write). What it holds in
// memory does not grow with the run: junit.xml's testcases go to a file
// per suite, and report.html's cases — the at most MaxReportCases it
// shows — to a file of their own, under the output directory until the
// reports are written.
type Builder struct {
	dir   string
	spill *spill
	junit *junitBuilder
	pick  htmlPicker
}

// NewBuilder returns a Builder for the reports of the output directory
// dir; Close releases what it holds.
func NewBuilder(dir string) *Builder {
	sp := &spill{parent: dir}
	return &Builder{dir: dir, spill: sp, junit: newJUnitBuilder(sp), pick: htmlPicker{limit: MaxReportCases, spill: sp}}
}

// Add takes one case, in results order. A failure to hold it (a full
// disk) is Write's error.
func (b *Builder) Add(c *results.CaseResult) {
	b.junit.add(c)
	b.pick.add(c)
}

// Write writes junit.xml and report.html into the directory, for the run
// summarised by s: the cases added, with the run's config file at
// configPath (as the run's -c named it, from the working directory):
// report.html's `anvil-host dag render` commands name it with -c, by a
// path from the directory, since they are run there (beside
// results.jsonl), where no config is. An empty configPath leaves -c out.
// The Builder takes no case after.
func (b *Builder) Write(s *results.Summary, configPath string) error {
	// What was held is read back before either file is written: one that
	// cannot be read leaves no report half-written.
	shown, err := b.pick.shown()
	if err != nil {
		return err
	}
	if b.junit.err != nil {
		return b.junit.err
	}
	if err := writeFile(filepath.Join(b.dir, "junit.xml"), func(w *bufio.Writer) error { return b.junit.write(w, s) }); err != nil {
		return err
	}
	if err := b.spill.remove(); err != nil {
		return fmt.Errorf("write reports: remove %s: %w", spillDirName, err)
	}
	attachCases(b.dir, shown)
	var extras pageExtras
	extras.config = configFrom(b.dir, configPath)
	extras.leftOut = b.pick.leftOut()
	extras.calibration, extras.note = readCalibration(b.dir)
	extras.comparison, extras.compareNote = readComparison(b.dir, s)
	return writeFile(filepath.Join(b.dir, "report.html"), func(w *bufio.Writer) error { return writeHTML(w, s, shown, extras) })
}

// Close removes what the Builder spilled to disk; after Write it has
// nothing left to remove.
func (b *Builder) Close() error { return b.spill.remove() }

// Write writes junit.xml and report.html into dir from its results.jsonl,
// read once, its cases/ and s.
func Write(dir string, s *results.Summary) error { return WriteWithConfig(dir, s, "") }

// WriteWithConfig is Write for a run of the config file at configPath
// (see Builder.Write). results.jsonl is read whole before any report is
// written, so an unreadable one leaves no half-written report.
func WriteWithConfig(dir string, s *results.Summary, configPath string) error {
	b := NewBuilder(dir)
	defer b.Close()
	if err := results.EachIn(dir, b); err != nil {
		return err
	}
	return b.Write(s, configPath)
}

// MaxReportCases bounds the cases report.html shows in full, so the page
// (and the memory to build it) does not grow without bound with the run:
// every case with a failure, error or skip is shown first, then passing
// cases up to the bound. The summary numbers always cover every case, and
// results.jsonl and cases/ hold them all.
const MaxReportCases = 1000

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

// attachCases sets the Case of each result that has none (one read from
// results.jsonl) from its cases/<id>.json in the output directory dir,
// trimmed to what the page shows. Only the shown cases' files are read. The report is best-effort here: a missing or
// unreadable case file only leaves that case without its fields, and a
// file of another case or an earlier run (another config hash) is ignored.
func attachCases(dir string, cases []results.CaseResult) {
	for i := range cases {
		if cases[i].Case != nil {
			continue
		}
		rec, err := results.ReadCase(dir, cases[i].CaseID)
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
		ToolsCalled: tools(c.ToolsCalled), ExpectedTools: tools(c.ExpectedTools),
		Scenario: str(c.Scenario), ExpectedOutcome: str(c.ExpectedOutcome), ChatbotRole: str(c.ChatbotRole)}
	// A long conversation keeps its first and last turns, with a turn
	// saying how many were left out between them.
	const maxTurns = 200
	keep := func(t abi.Turn) abi.Turn {
		return abi.Turn{Role: t.Role, Content: str(t.Content), ToolsCalled: tools(t.ToolsCalled), RetrievalContext: list(t.RetrievalContext)}
	}
	for i, t := range c.Turns {
		if len(c.Turns) > maxTurns && i == maxTurns/2 {
			out.Turns = append(out.Turns, abi.Turn{Role: abi.RoleSystem, Content: fmt.Sprintf("… %d turns omitted from this report", len(c.Turns)-maxTurns)})
		}
		if len(c.Turns) <= maxTurns || i < maxTurns/2 || i >= len(c.Turns)-maxTurns/2 {
			out.Turns = append(out.Turns, keep(t))
		}
	}
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
