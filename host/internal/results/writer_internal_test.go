package results

import (
	"bytes"
	stdjson "encoding/json"
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
// and plugin metrics, errors, details, spreads, panels, DAG spreads,
// strings that need escaping or are not valid UTF-8, with and without
// the case.
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
				Threshold: 0.5, Reason: pick(), LatencyMS: rng.Float64() * 1e4, Fuel: uint64(rng.IntN(3)) << 40,
				Usage: JudgeUsage{Requests: 1, Calls: 1, Attempts: 1, InputTokens: rng.IntN(5000), OutputTokens: 7, Replayed: rng.IntN(2)}}
			switch rng.IntN(6) {
			case 0:
				mr.Score = &score
				mr.Details = stdjson.RawMessage(`{"steps": ["a", "b<c>"],  "n": 1e3}`)
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
			case 4:
				mr.Score = &score
				mr.DAGSpread = &DAGSpread{Scorings: 3, Paths: 2, PathDiffers: true,
					Nodes:  []NodeSpread{{Node: "q", Ran: 3, Failed: 1, Verdicts: []VerdictCount{{Verdict: "true", Count: 2}}, Differs: true}},
					Leaves: []LeafSpread{{Node: "q", Verdict: "true", Fired: 2, Mean: 0.5, StdDev: 0.1}}}
			}
			r.Metrics = append(r.Metrics, mr)
		}
		if rng.IntN(4) != 0 {
			r.Case = &abi.TestCase{ID: r.CaseID, Input: pick(), ActualOutput: pick(), ExpectedOutput: pick(),
				Context:     []string{pick(), pick()},
				ToolsCalled: []abi.ToolCall{{Name: "t", Arguments: stdjson.RawMessage(`{ "q" : "<x>" }`)}},
				Extra:       map[string]stdjson.RawMessage{"z": stdjson.RawMessage(`1`), "a": stdjson.RawMessage(`[true, null]`)}}
		}
		out = append(out, r)
	}
	return out
}

// asRead is r as reading it back gives it: what encoding/json made of it
// (text that is not UTF-8 with U+FFFD for each bad byte, details compact),
// which is what an earlier version's file reads as.
func asRead(t testing.TB, r *CaseResult) *CaseResult {
	t.Helper()
	b, err := stdjson.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out CaseResult
	if err := stdjson.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// writeAll writes cases through a Writer into dir, returning what its
// sink was given.
func writeAll(t testing.TB, dir string, resume bool, cases []*CaseResult) []*CaseResult {
	t.Helper()
	var got recorder
	w, err := OpenWriter(dir, WriterOptions{Resume: resume, Sink: &got})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cases {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

type recorder []*CaseResult

func (r *recorder) Add(c *CaseResult) { *r = append(*r, c) }

// TestWrittenResultsReadBack: every line and case file the writer writes
// reads back to the result written, as encoding/json would have read it
// (so an old file and a new one read alike; raw JSON values compare by
// value: the writer lays them out afresh), and the sink is given each
// case, in file order.
func TestWrittenResultsReadBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := writerCases(300)
	sunk := writeAll(t, dir, false, cases)
	if len(sunk) != len(cases) {
		t.Fatalf("the sink was given %d cases of %d", len(sunk), len(cases))
	}
	i := 0
	err := Each(filepath.Join(dir, "results.jsonl"), func(got *CaseResult) error {
		if sunk[i] != cases[i] {
			t.Fatalf("the sink's case %d is not the case written %d-th", i, i)
		}
		want := asRead(t, cases[i])
		want.Case = nil
		if got, want := canonical(got), canonical(want); !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d reads as\n%+v\nwant\n%+v", i+1, got, want)
		}
		full, err := ReadCase(dir, cases[i].CaseID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(full), canonical(asRead(t, cases[i])); !reflect.DeepEqual(got, want) {
			t.Fatalf("case file %d reads as\n%+v\n%+v\nwant\n%+v\n%+v", i, got, got.Case, want, want.Case)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(cases) {
		t.Fatalf("%d lines for %d cases", i, len(cases))
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "cases"))
	if len(entries) != len(cases) {
		t.Fatalf("%d files in cases/ for %d cases", len(entries), len(cases))
	}
}

// canonical is r with every raw JSON value (details, tool arguments and
// outputs, extra fields) in one form, compared by value: a decoded value
// keeps the layout and escapes of its input, which the writer rewrites;
// details that are an empty JSON value (null, "", {}, []) are none
// (omitempty leaves them out).
func canonical(r *CaseResult) *CaseResult {
	canon := func(raw stdjson.RawMessage) stdjson.RawMessage {
		if raw == nil {
			return nil
		}
		var v any
		if stdjson.Unmarshal(raw, &v) != nil {
			return raw
		}
		b, _ := stdjson.Marshal(v)
		return b
	}
	out := *r
	out.Metrics = append([]MetricResult(nil), r.Metrics...)
	for i := range out.Metrics {
		d := canon(out.Metrics[i].Details)
		switch string(d) {
		case "null", `""`, "{}", "[]":
			d = nil
		}
		out.Metrics[i].Details = d
	}
	if r.Case != nil {
		c := *r.Case
		c.ToolsCalled = append([]abi.ToolCall(nil), c.ToolsCalled...)
		for k := range c.ToolsCalled {
			c.ToolsCalled[k].Arguments = canon(c.ToolsCalled[k].Arguments)
			c.ToolsCalled[k].Output = canon(c.ToolsCalled[k].Output)
		}
		if c.Extra != nil {
			extra := map[string]stdjson.RawMessage{}
			for k, v := range c.Extra {
				extra[k] = canon(v)
			}
			c.Extra = extra
		}
		out.Case = &c
	}
	return &out
}

// oldLines are results.jsonl lines as earlier versions wrote them (the
// hand encoder's bytes were encoding/json's): escapes of every kind,
// members in another order, null details, the usage fields a version
// left out.
var oldLines = []string{
	`{"case_id":"a","config_hash":"h","metrics":[]}`,
	`{"case_id":"a","config_hash":"h","metrics":null}`,
	`{"case_id":"a\"b\\c\/d\n\t\r\b\f","config_hash":"h","metrics":[{"metric":"m","kind":"k","status":"failed","gated":false,"score":-0,"threshold":1e-3,"reason":"got \"x\"…, want \"y\"…","details":{"first_difference":0},"usage":{"requests":0,"calls":0,"http_attempts":0,"cache_hits":0,"input_tokens":0,"output_tokens":0,"usd":0},"latency_ms":1.113}]}`,
	`{"config_hash":"h","metrics":[{"latency_ms":2,"usage":{"usd":1.5E+2,"usage_unknown":1},"details":null,"verdict_note":"ü","error_class":"plugin","score_mode":"logprobs"},{}],"case_id":"é"}`,
	`{"case_id":"x","config_hash":"h","metrics":[{"details":[{"a":[[],{},"\u00e9\ud800",true,false,null,-1.5e-7]}],"score":12345678901234567890}]}`,
	`{"case_id":"\u00e9\ud83d\ude00\ud800\u0041\udc00x\ud83d","config_hash":"\u003c\u0026\u003e\u2028","metrics":[]}`,
	`{"case_id":"case-000001","config_hash":"09935636f1fa8763","metrics":[{"metric":"correctness","kind":"geval","status":"failed","gated":false,"score":0.19,"threshold":0.5,"reason":"The actual output misses the point.","score_mode":"weighted","details":{"steps":["Read the Input."],"raw_score":0,"weighted_score":0.19999999999999998,"candidates":[{"value":0,"probability":0.6}],"usage":{"model":"bench-judge","input_tokens":659,"cache_hit":false}},"usage":{"requests":1,"calls":1,"http_attempts":1,"cache_hits":0,"replayed":2,"input_tokens":659,"output_tokens":36,"usd":0.00012044999999999999},"latency_ms":100.601,"fuel":123456789,"spread":{"scores":[0.1,0.3],"mean":0.2,"stddev":0.1414,"flipped":true},"panel":[{"judge":"a","model":"m","status":"passed","score":0.2,"error":{"code":"judge_error","message":"x","retryable":true}}],"aggregate":"mean","dag_spread":{"scorings":2,"paths":2,"path_differs":true,"nodes":[{"node":"q","ran":2,"verdicts":[{"verdict":"true","count":1}],"differs":true}]}}]}`,
}

// TestOldLinesRead: a line an earlier version wrote decodes to what
// encoding/json made of it.
func TestOldLinesRead(t *testing.T) {
	t.Parallel()
	lines := append([]string(nil), oldLines...)
	for _, r := range writerCases(100) {
		line := *r
		line.Case = nil
		b, err := stdjson.Marshal(&line)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	for _, l := range lines {
		var want, got CaseResult
		if err := stdjson.Unmarshal([]byte(l), &want); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if err := DecodeLine([]byte(l), &got); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", l, got, want)
		}
	}
}

// TestBadLineNamesFileLineAndField: a line that does not decode is an
// error naming the file, the line and the member at fault.
func TestBadLineNamesFileLineAndField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{`{"case_id":"a","config_hash":"h","metrics":[{"metric":"m","score":"high"}]}`, `results.jsonl:2: `},
		{`{"case_id":"a","config_hash":"h","metrics":[{"metric":"m","score":"high"}]}`, `/metrics/0/score`},
		{`{"case_id":"a","case_id":"b"}`, `duplicate`},
		{`{"case_id":"a"} {"case_id":"b"}`, `results.jsonl:2: `},
		{`{"case_id":"a",`, `results.jsonl:2: `},
		{``, `results.jsonl:2: `},
	} {
		path := filepath.Join(t.TempDir(), "results.jsonl")
		if err := os.WriteFile(path, []byte(oldLines[0]+"\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Each(path, func(*CaseResult) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.line, err, tc.want)
		}
	}
}

// FuzzDecodeLine: any line either decodes or is an error, and what
// decodes is written as a line that reads back to the same value: the
// line written from it is written again, byte for byte.
func FuzzDecodeLine(f *testing.F) {
	for _, l := range oldLines {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"case_id":"a","config_hash":"h","metrics":[{"details":""}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var r CaseResult
		if DecodeLine(line, &r) != nil {
			return
		}
		first, err := encodeLine(&r)
		if err != nil {
			// Only what no writer writes: a float out of range.
			if !strings.Contains(err.Error(), "float") {
				t.Fatalf("%q decodes but does not encode: %v", line, err)
			}
			return
		}
		var again CaseResult
		if err := DecodeLine(bytes.TrimSuffix(first, []byte("\n")), &again); err != nil {
			t.Fatalf("%q: its encoding %q does not decode: %v", line, first, err)
		}
		second, err := encodeLine(&again)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("%q is written as\n%s\nthen as\n%s (%v)", line, first, second, err)
		}
	})
}

// encodeLine is r's line as the writer writes it.
func encodeLine(r *CaseResult) ([]byte, error) {
	var e lineEncoder
	e.reset()
	for i := range r.Metrics {
		if len(r.Metrics[i].Details) == 0 {
			r.Metrics[i].Details = nil
		}
	}
	err := e.appendLine(r)
	return e.lines.Bytes(), err
}

// BenchmarkWriter is the writer's work per case: encoding the line and
// the case file, creating the file (a new one per case, as in a run),
// and the batch's append and fsync, in batches of 32.
func BenchmarkWriter(b *testing.B) {
	shapes := writerCases(64)
	cases := make([]CaseResult, b.N)
	for i := range cases {
		cases[i] = *shapes[i%len(shapes)]
		cases[i].CaseID = fmt.Sprint("b", i)
	}
	dir := b.TempDir()
	w, err := OpenWriter(dir, WriterOptions{})
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

// BenchmarkEach reads back results.jsonl lines of bench/run.sh's shape:
// the cost per line of --resume and of the commands that read a run.
func BenchmarkEach(b *testing.B) {
	const n = 2000
	path := filepath.Join(b.TempDir(), "results.jsonl")
	var buf bytes.Buffer
	for range n {
		buf.WriteString(oldLines[len(oldLines)-1] + "\n")
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cputime.Report(b)
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if err := Each(path, func(*CaseResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
}

// TestCasesWithinTheIntervalShareOneFsync: cases that finish while a
// batch waits for its commit go into it (one fsync), and Close commits at
// once what is waiting.
func TestCasesWithinTheIntervalShareOneFsync(t *testing.T) {
	t.Parallel()
	var batches []int
	w, err := OpenWriter(t.TempDir(), WriterOptions{OnDurable: func(n int) { batches = append(batches, n) }, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range writerCases(40) {
		if err := w.Write(r); err != nil {
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

// durableSink checks, as each case is given, that its line is already in
// results.jsonl.
type durableSink struct {
	t     *testing.T
	path  string
	given int
}

func (s *durableSink) Add(r *CaseResult) {
	s.given++
	b, err := os.ReadFile(s.path)
	if err != nil {
		s.t.Errorf("read results.jsonl: %v", err)
		return
	}
	if n := bytes.Count(b, []byte("\n")); n < s.given {
		s.t.Errorf("case %d (%q) given with %d lines in results.jsonl", s.given, r.CaseID, n)
	}
}

// TestALoneCaseIsCommittedAfterTheInterval: a case with nothing after it
// is made durable by the interval, not left until Close, and only then
// given to the sink.
func TestALoneCaseIsCommittedAfterTheInterval(t *testing.T) {
	t.Parallel()
	durable := make(chan int, 1)
	dir := t.TempDir()
	sink := &durableSink{t: t, path: filepath.Join(dir, "results.jsonl")}
	w, err := OpenWriter(dir, WriterOptions{OnDurable: func(n int) { durable <- n }, Interval: time.Millisecond, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(writerCases(1)[0]); err != nil {
		t.Fatal(err)
	}
	if n := <-durable; n != 1 || sink.given != 1 {
		t.Fatalf("durable %d, given to the sink %d; want 1 and 1", n, sink.given)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("results.jsonl after the commit: %q, %v", b, err)
	}
}

// TestCaseFileSymlinkIsNotFollowed: a link planted at a case's file (an
// output directory reused with --resume) is refused, not written through.
func TestCaseFileSymlinkIsNotFollowed(t *testing.T) {
	t.Parallel()
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
	if err := os.Symlink(outside, filepath.Join(dir, "cases", CaseFileName(r.CaseID))); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(dir, WriterOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), CaseFileName(r.CaseID)) {
		t.Fatalf("Close: %v; want the write of case %q refused", err, r.CaseID)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatalf("the link's target was written: %q", b)
	}
}

// TestReadDoneGivesEveryCaseToTheSink: --resume reads results.jsonl
// once, giving each complete case to the sink in file order; a case with
// a retryable error is not complete: its line is removed, and it is not
// given; a torn last line is cut off and not given; a line of another
// config, or one that does not decode, is an error.
func TestReadDoneGivesEveryCaseToTheSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := writerCases(50)
	writeAll(t, dir, false, cases)
	path := filepath.Join(dir, "results.jsonl")
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var complete []*CaseResult
	var kept []byte
	for i, line := range bytes.SplitAfter(whole, []byte("\n"))[:len(cases)] {
		if !RetryOnResume(cases[i]) {
			complete = append(complete, cases[i])
			kept = append(kept, line...)
		}
	}
	if len(complete) == 0 || len(complete) == len(cases) {
		t.Fatalf("%d of %d cases complete: the test needs both kinds", len(complete), len(cases))
	}
	const torn = `{"case_id":"torn","config_`
	if err := os.WriteFile(path, append(whole, torn...), 0o644); err != nil {
		t.Fatal(err)
	}
	var got recorder
	done, rep, unchecked, err := ReadDone(dir, "sha256:abc", nil, &got)
	if err != nil {
		t.Fatal(err)
	}
	n := len(complete)
	if unchecked != n {
		t.Errorf("%d lines without an identity counted; want %d", unchecked, n)
	}
	if rep.Done != n || rep.Retried != len(cases)-n || rep.TornLineBytes != int64(len(torn)) || len(done) != n || len(got) != n {
		t.Fatalf("done %d (%d ids), retried %d, torn %d bytes, given %d; want %d, %d, the torn line, %d",
			rep.Done, len(done), rep.Retried, rep.TornLineBytes, len(got), n, len(cases)-n, n)
	}
	for i, r := range got {
		want := asRead(t, complete[i])
		want.Case = nil
		if !done[r.CaseID] || !reflect.DeepEqual(canonical(r), canonical(want)) {
			t.Fatalf("case %d given as %+v; want %+v", i, r, want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, kept) {
		t.Fatalf("results.jsonl after --resume's read:\n%s\nwant the complete cases' lines:\n%s", after, kept)
	}
	if _, _, _, err := ReadDone(dir, "sha256:other", nil, nil); err == nil || !strings.Contains(err.Error(), "results.jsonl:1: written under config hash sha256:abc") {
		t.Fatalf("another config's results: %v", err)
	}
	if err := os.WriteFile(path, append(kept, "{\"case_id\":1}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadDone(dir, "sha256:abc", nil, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("results.jsonl:%d: ", n+1)) || !strings.Contains(err.Error(), "run without --resume") {
		t.Fatalf("a line that does not decode: %v", err)
	}
	if done, rep, _, err := ReadDone(t.TempDir(), "h", nil, nil); err != nil || len(done) != 0 || rep.Done != 0 {
		t.Fatalf("no results.jsonl: %v, %v, %v", done, rep, err)
	}
}

// TestWriterFailsOnAResultItCannotEncode: a score that is not a number
// stops the writer with the case named, rather than writing a line no
// reader takes.
func TestWriterFailsOnAResultItCannotEncode(t *testing.T) {
	t.Parallel()
	w, err := OpenWriter(t.TempDir(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nan := func() *float64 { v := 0.0; v /= v; return &v }()
	if err := w.Write(&CaseResult{CaseID: "nan", Metrics: []MetricResult{{Metric: "m", Score: nan}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), `encode case "nan"`) {
		t.Fatalf("Close: %v", err)
	}
}

// FuzzCaseFileName holds CaseFileName's plain-name shortcut to the
// regular expression it skips.
func FuzzCaseFileName(f *testing.F) {
	for _, id := range []string{"case-000001", "", ".hidden", "a/b", "é", strings.Repeat("x", 121), "a.b_c-D9"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		safe := unsafeName.ReplaceAllString(id, "_")
		if safe != id || safe == "" || safe[0] == '.' {
			safe = fmt.Sprintf("%s-%08x", safe, fnv32(id))
		}
		if len(safe) > 120 {
			safe = fmt.Sprintf("%s-%08x", safe[:100], fnv32(id))
		}
		if got := CaseFileName(id); got != safe+".json" {
			t.Fatalf("CaseFileName(%q) = %q, want %q", id, got, safe+".json")
		}
	})
}
