package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
)

// writerCases are results shaped like every kind the engine writes: judge
// and plugin metrics, errors, details, spreads, panels, strings that
// encoding/json escapes, with and without the case.
func writerCases(n int) []*CaseResult {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", "plain", "<b>&amp;</b> \"quoted\" \\ back", "tab\tnew\nline\u2028\u2029", "ünïcødé 日本", string([]byte{0xff, 'x', 0xc3}), "\x00\x1f"}
	pick := func() string { return texts[rng.IntN(len(texts))] + fmt.Sprint(rng.IntN(1000)) }
	var out []*CaseResult
	for i := range n {
		r := &CaseResult{CaseID: fmt.Sprintf("c%d/%s", i, pick()), ConfigHash: "sha256:abc"}
		for m := range rng.IntN(4) {
			score := rng.Float64()
			mr := MetricResult{Metric: fmt.Sprint("m", m), Kind: "geval", Status: "passed", Gated: rng.IntN(2) == 0,
				Threshold: 0.5, Reason: pick(), LatencyMS: rng.Float64() * 1e4,
				Usage: JudgeUsage{Requests: 1, Calls: 1, Attempts: 1, InputTokens: rng.IntN(5000), OutputTokens: 7}}
			switch rng.IntN(5) {
			case 0:
				mr.Score = &score
				mr.Details = json.RawMessage(`{"steps": ["a", "b<c>"],  "n": 1e3}`)
			case 1:
				mr.Status, mr.ErrorClass = "error", "judge"
				mr.Error = &abi.Error{Code: abi.CodeJudge, Message: pick(), Retryable: true}
			case 2:
				mr.Score = &score
				mr.Spread = &Spread{Scores: []float64{0.1, 1e-9, 3e21}, Mean: 0.3, StdDev: 0.01, Flipped: true}
			case 3:
				mr.Score = &score
				mr.Panel = []PanelVote{{Judge: "a", Status: "passed", Score: &score}, {Judge: "b", Status: "error", Error: &abi.Error{Code: abi.CodeBudget, Message: "x"}}}
				mr.Aggregate = "mean"
			}
			r.Metrics = append(r.Metrics, mr)
		}
		if rng.IntN(4) != 0 {
			r.Case = &abi.TestCase{ID: r.CaseID, Input: pick(), ActualOutput: pick(), ExpectedOutput: pick(),
				Context:     []string{pick(), pick()},
				ToolsCalled: []abi.ToolCall{{Name: "t", Arguments: json.RawMessage(`{ "q" : "<x>" }`)}},
				Extra:       map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`[true, null]`)}}
		}
		out = append(out, r)
	}
	return out
}

// TestCaseFilesAndLinesAreWhatTheEncoderMakes: the writer derives
// cases/<id>.json from the results line; both must be byte for byte what
// json.MarshalIndent of the result and json.Encoder of the result without
// its case make (the outputs before the derivation).
func TestCaseFilesAndLinesAreWhatTheEncoderMakes(t *testing.T) {
	dir := t.TempDir()
	w, err := openResults(dir, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := writerCases(300)
	var wantLines bytes.Buffer
	enc := json.NewEncoder(&wantLines)
	for _, r := range cases {
		line := *r
		line.Case = nil
		if err := enc.Encode(&line); err != nil {
			t.Fatal(err)
		}
		if err := w.write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantLines.Bytes()) {
		t.Fatalf("results.jsonl differs from json.Encoder's lines")
	}
	for _, r := range cases {
		want, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "cases", caseFileName(r.CaseID)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %q:\ngot  %s\nwant %s", r.CaseID, got, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "cases"))
	if len(entries) != len(cases) {
		t.Fatalf("%d files in cases/ for %d cases", len(entries), len(cases))
	}
}

// BenchmarkResultsWriter is the writer's work per case: encoding the line
// and the case file, creating the file (a new one per case, as in a run),
// and the batch's append and fsync, in batches of 32.
func BenchmarkResultsWriter(b *testing.B) {
	shapes := writerCases(64)
	cases := make([]CaseResult, b.N)
	for i := range cases {
		cases[i] = *shapes[i%len(shapes)]
		cases[i].CaseID = fmt.Sprint("b", i)
	}
	dir := b.TempDir()
	w, err := openResults(dir, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]*CaseResult, 0, 32)
	b.ReportAllocs()
	cputime.Report(b)
	b.ResetTimer()
	for i := range cases {
		batch = append(batch, &cases[i])
		if len(batch) == cap(batch) || i == len(cases)-1 {
			if err := w.flush(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.StopTimer()
	close(w.in)
	<-w.done
	w.f.Close()
	w.files.Close()
}

// TestCasesWithinTheIntervalShareOneFsync: cases that finish while a
// batch waits for its commit go into it (one fsync), and Close commits at
// once what is waiting.
func TestCasesWithinTheIntervalShareOneFsync(t *testing.T) {
	var batches []int
	w, err := openResultsEvery(t.TempDir(), false, func(n int) { batches = append(batches, n) }, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range writerCases(40) {
		if err := w.write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(batches, []int{40}) {
		t.Errorf("batches %v; want one of 40", batches)
	}
}

// TestALoneCaseIsCommittedAfterTheInterval: a case with nothing after it
// is made durable by the interval, not left until Close.
func TestALoneCaseIsCommittedAfterTheInterval(t *testing.T) {
	durable := make(chan int, 1)
	dir := t.TempDir()
	w, err := openResultsEvery(dir, false, func(n int) { durable <- n }, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.write(writerCases(1)[0]); err != nil {
		t.Fatal(err)
	}
	if n := <-durable; n != 1 {
		t.Fatalf("durable %d; want 1", n)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("results.jsonl after the commit: %q, %v", b, err)
	}
}

// TestCaseFileSymlinkIsNotFollowed: a link planted at a case's file (an
// output directory reused with --resume) is refused, not written through.
func TestCaseFileSymlinkIsNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := writerCases(1)[0]
	if err := os.Symlink(outside, filepath.Join(dir, "cases", caseFileName(r.CaseID))); err != nil {
		t.Fatal(err)
	}
	w, err := openResults(dir, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), caseFileName(r.CaseID)) {
		t.Fatalf("Close: %v; want the write of case %q refused", err, r.CaseID)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatalf("the link's target was written: %q", b)
	}
}
