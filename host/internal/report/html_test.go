package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files")

const hostile = `<script>alert("x")</script>`

func fixtureDAG(t *testing.T) json.RawMessage {
	t.Helper()
	p2 := 2.0
	res := dag.Result{
		Score: 0.2, Aggregate: "min", Reason: "gate=true → has_answer=false (score 2/10)",
		Path: []string{"gate", "extract", "has_answer"},
		Nodes: []dag.NodeRecord{
			{ID: "gate", Kind: "json_valid", Verdict: "true", Reason: "output parses as JSON"},
			{ID: "extract", Kind: "task", Output: "- claim one\n- claim two", Usage: dag.Usage{JudgeCalls: 1}},
			{ID: "has_answer", Kind: "binary", Verdict: "false", Reason: "the answer never names a <city>", Usage: dag.Usage{JudgeCalls: 1}},
		},
		Leaves: []dag.Leaf{{NodeID: "has_answer", Verdict: "false", Score: 0.2, Points: &p2}},
		Totals: dag.Usage{JudgeCalls: 2, InputTokens: 300, OutputTokens: 40},
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixture(t *testing.T) (*results.Summary, []results.CaseResult) {
	t.Helper()
	steps, _ := json.Marshal(map[string]any{
		"steps":          []string{"Read the question.", "Check the answer <b>names</b> the city.", "Score 0-10."},
		"steps_source":   "generated",
		"prompt_version": "geval/v1",
	})
	s := &results.Summary{
		ConfigHash: "sha256:0123abcd", Cases: 4, Verdict: results.VerdictFailed, Passed: false, JudgeErrors: 1, PluginErrors: 1,
		Judge: results.JudgeUsage{Requests: 8, Calls: 9, Attempts: 10, CacheHits: 2, InputTokens: 1200, OutputTokens: 150, USD: 0.0042},
		Prepare: []results.PrepareSummary{{Metric: "correctness", Details: steps,
			Usage: results.JudgeUsage{Calls: 1, InputTokens: 100, OutputTokens: 50, USD: 0.0002}}},
		Metrics: []results.MetricSummary{
			{Metric: "correctness", Kind: "geval", Gated: true, Verdict: results.VerdictFailed, Threshold: 0.6, N: 4, Scored: 3, Passed: 2, Failed: 1, Errors: 1,
				Mean: ptr(0.6333), P50: ptr(0.8), PassRate: ptr(0.6667), ScoreModes: map[string]int{"weighted": 2, "raw": 1},
				ErrorKinds: map[string]int{"judge_error": 1}, FailedCases: []string{"c2-fail"},
				Judge: results.JudgeUsage{Calls: 5, CacheHits: 2, InputTokens: 800, OutputTokens: 100, USD: 0.003}},
			{Metric: "path", Kind: "dag", Gated: false, Verdict: results.VerdictInformational, Threshold: 0.5, N: 4, Scored: 1, Failed: 1, Skipped: 2, Errors: 1,
				Mean: ptr(0.2), P50: ptr(0.2), PassRate: ptr(0), SkipReason: "case has no expected_output",
				ErrorKinds: map[string]int{"trap": 1}, FailedCases: []string{"c4-dag"},
				Judge: results.JudgeUsage{Calls: 2, InputTokens: 300, OutputTokens: 40, USD: 0.0012}},
		},
	}
	long := strings.Repeat("The answer misses the point. ", 30)
	cases := []results.CaseResult{
		{CaseID: "c1-pass", ConfigHash: "sha256:0123abcd",
			Case: &abi.TestCase{ID: "c1-pass", Input: "Capital of France?", ActualOutput: "Paris"},
			Metrics: []results.MetricResult{
				{Metric: "correctness", Kind: "geval", Status: results.StatusPassed, Gated: true, Score: ptr(0.9), Threshold: 0.6,
					ScoreMode: "weighted", Reason: "names Paris", Usage: results.JudgeUsage{Calls: 1, InputTokens: 200, OutputTokens: 20}, LatencyMS: 420},
				{Metric: "path", Kind: "dag", Status: results.StatusSkipped, Threshold: 0.5, Reason: "case has no expected_output"},
			}},
		{CaseID: "c2-fail", ConfigHash: "sha256:0123abcd",
			Case: &abi.TestCase{ID: "c2-fail", Input: "Capital of Italy?", ActualOutput: "I think " + hostile + " it is Milan",
				ExpectedOutput: "Rome", Context: []string{"Rome is the capital of Italy."}},
			Metrics: []results.MetricResult{
				{Metric: "correctness", Kind: "geval", Status: results.StatusFailed, Gated: true, Score: ptr(0.2), Threshold: 0.6,
					ScoreMode: "raw", Reason: "says " + hostile + ". " + long, Details: json.RawMessage(`{"raw_score":2,"steps_source":"generated"}`),
					Usage: results.JudgeUsage{Calls: 1, InputTokens: 200, OutputTokens: 30}, LatencyMS: 1530},
				{Metric: "path", Kind: "dag", Status: results.StatusSkipped, Threshold: 0.5, Reason: "case has no expected_output"},
			}},
		{CaseID: "c3-error", ConfigHash: "sha256:0123abcd",
			Metrics: []results.MetricResult{
				{Metric: "correctness", Kind: "geval", Status: results.StatusError, Gated: true, Threshold: 0.6, ErrorClass: "judge",
					Error: &abi.Error{Code: abi.CodeJudge, Message: "judge returned 503 after 3 attempts", Retryable: true}},
				{Metric: "path", Kind: "dag", Status: results.StatusError, Threshold: 0.5, ErrorClass: "plugin",
					Error: &abi.Error{Code: abi.CodeTrap, Message: "node \"gate\": wasm trap: unreachable", Plugin: "jsonnodes@1.2.0",
						Digest: "sha256:feedface", Stderr: "panic: index out of range [3] with length 3\ngoroutine 1 [running]:\nmain.check()"}},
			}},
		{CaseID: "c4-dag", ConfigHash: "sha256:0123abcd",
			Metrics: []results.MetricResult{
				{Metric: "correctness", Kind: "geval", Status: results.StatusPassed, Gated: true, Score: ptr(0.8), Threshold: 0.6, ScoreMode: "weighted"},
				{Metric: "path", Kind: "dag", Status: results.StatusFailed, Gated: false, Score: ptr(0.2), Threshold: 0.5,
					Reason: "gate=true → has_answer=false (score 2/10)", Details: fixtureDAG(t),
					Usage: results.JudgeUsage{Calls: 2, InputTokens: 300, OutputTokens: 40}},
			}},
	}
	return s, cases
}

func render(t *testing.T) string {
	t.Helper()
	s, cases := fixture(t)
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLGolden(t *testing.T) {
	got := render(t)
	if again := render(t); again != got {
		t.Fatal("HTML is not deterministic")
	}
	testkit.Golden(t, filepath.Join("testdata", "report.golden.html"), []byte(got), *update)
}

func TestHTMLSelfContainedAndBalanced(t *testing.T) {
	out := render(t)
	for _, bad := range []string{"http://", "https://", "<link", "@import", "src="} {
		if strings.Contains(out, bad) {
			t.Errorf("page loads or links something external: contains %q", bad)
		}
	}
	for _, tag := range []string{"table", "tbody", "tr", "td", "th", "details", "summary", "pre", "div", "dl", "ol", "ul", "li", "p", "select", "form", "script", "style"} {
		open := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllStringIndex(out, -1))
		closing := strings.Count(out, "</"+tag+">")
		if open != closing {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closing)
		}
	}
}

func TestHTMLHeaderAndMetrics(t *testing.T) {
	out := render(t)
	for _, want := range []string{
		"✖ FAILED", "<dt>Cases</dt><dd>4</dd>", "<dd>9 <small>(8 requests · 2 cached · 10 HTTP attempts)</small></dd>", "<dd>1350 <small>in 1200 · out 150</small></dd>",
		"$0.0042", "<dt>Judge errors</dt><dd>1</dd>", "<dt>Plugin errors</dt><dd>1</dd>", "<dt>Metric errors</dt><dd>0</dd>", "sha256:0123abcd",
		// the terminal table's numbers
		`<td class="num">0.633</td><td class="num">0.800</td><td class="num">66.7%</td><td class="num">0.60</td>`, "weighted:2,raw:1",
		`<span class="badge failed">FAIL</span>`, `<span class="badge info">info</span>`,
		"Gated metrics failing their threshold: <a href=\"#metric-1\"><b>correctness</b></a>",
		"2 of 4 skipped: case has no expected_output", "judge_error: 1",
		// prepare: the generated steps and where they came from
		"steps source <code>generated</code>", "<li>Check the answer &lt;b&gt;names&lt;/b&gt; the city.</li>",
		`<a href="#case-2">c2-fail</a>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	out := render(t)
	if n := strings.Count(out, "<script"); n != 1 {
		t.Errorf("want only the page's own <script>, found %d", n)
	}
	if strings.Contains(out, `alert("x")`) {
		t.Error("case output is not escaped")
	}
	if !strings.Contains(out, "I think &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; it is Milan") {
		t.Error("escaped case output missing")
	}
	if !strings.Contains(out, "never names a &lt;city&gt;") {
		t.Error("dag node reason not escaped")
	}
}

func TestHTMLFailuresFirst(t *testing.T) {
	out := render(t)
	// gated failure, error, ungated failure, pass + skip
	order := []string{`id="case-2"`, `id="case-3"`, `id="case-4"`, `id="case-1"`}
	last := -1
	for _, id := range order {
		i := strings.Index(out, id)
		if i < 0 || i < last {
			t.Fatalf("case groups not in failures-first order at %s", id)
		}
		last = i
	}
}

func TestHTMLLongReasonCapped(t *testing.T) {
	out := render(t)
	m := regexp.MustCompile(`<td class="reason">says &lt;script&gt;[^<]*</td>`).FindString(out)
	if m == "" || !strings.HasSuffix(m, "…</td>") || len(m) > 600 {
		t.Fatalf("table cell not capped: %q", m)
	}
	if !strings.Contains(out, "<summary>full reason</summary><pre>says &lt;script&gt;") ||
		!strings.Contains(out, strings.Repeat("The answer misses the point. ", 30)) {
		t.Error("full reason not in <details>")
	}
}

func TestHTMLDAGPath(t *testing.T) {
	out := render(t)
	for _, want := range []string{
		"<b>DAG path</b> · score 0.200 · aggregate min",
		"<li><code>gate</code> <small>json_valid</small> → <span class=\"verdict\">true</span>",
		"<code>has_answer</code> <small>binary</small> → <span class=\"verdict\">false</span>",
		"<div class=\"nreason\">output parses as JSON</div>",
		"<summary>output</summary><pre>- claim one\n- claim two</pre>",
		"<li><code>has_answer</code> = <span class=\"verdict\">false</span> → score 2/10 (score 0.200)</li>",
		"<summary>Mermaid flowchart (source)</summary>",
		"<pre>flowchart TD\n",
		"p2{&#34;has_answer&lt;br/&gt;binary&lt;br/&gt;= false&#34;}", // Mermaid source, HTML-escaped
		"p2 --&gt;|&#34;false&#34;| l0",
		"anvil-host dag render path --results results.jsonl --case c4-dag",
		`<tr class="mr st-failed has-more" data-status="failed" data-metric="path">`,
		"<br><small>not gated</small>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLError(t *testing.T) {
	out := render(t)
	for _, want := range []string{
		`<span class="badge error">ERROR</span>`,
		"<code>judge_error</code> <small>judge</small><br>judge returned 503 after 3 attempts",
		"<dt>retryable</dt><dd>yes</dd>",
		"<code>trap</code> <small>plugin</small><br>node &#34;gate&#34;: wasm trap: unreachable",
		"<dt>plugin</dt><dd><code>jsonnodes@1.2.0 (sha256:feedface)</code></dd>",
		"<details><summary>guest stderr</summary><pre>panic: index out of range [3] with length 3\ngoroutine 1 [running]:\nmain.check()</pre></details>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := report.HTML(&b, &results.Summary{Verdict: results.VerdictPassed, Passed: true}, nil); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "✔ PASSED") || !strings.Contains(out, "No case results.") {
		t.Errorf("empty run page:\n%s", out)
	}
}

func TestWriteReportHTML(t *testing.T) {
	s, cases := fixture(t)
	dir := writeRun(t, cases)
	// A stale case file of an earlier config is ignored; a torn one too.
	os.WriteFile(filepath.Join(dir, "cases", "old.json"), []byte(`{"case_id":"c1-pass","config_hash":"other","case":{"id":"c1-pass","actual_output":"STALE"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "cases", "torn.json"), []byte(`{"case_id":`), 0o644)
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	// Write reads results.jsonl and cases/ back: the page equals the one
	// rendered from the results in memory.
	var want bytes.Buffer
	if err := report.HTML(&want, s, cases); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Error("report.html written by Write differs from HTML of the same results")
	}
	if strings.Contains(string(got), "STALE") {
		t.Error("a stale case file was used")
	}
	for _, w := range []string{"<b>input</b>Capital of Italy?", "<b>DAG path</b>", "guest stderr"} {
		if !strings.Contains(string(got), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}

func TestWriteCapsHugeDetails(t *testing.T) {
	dir := t.TempDir()
	huge := `{"blob":"` + strings.Repeat("x", report.MaxDetailsBytes) + `"}`
	line := `{"case_id":"a","config_hash":"h","metrics":[{"metric":"m","kind":"geval","status":"passed","threshold":0.5,"score":1,"details":` + huge + `,"usage":{}}]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &results.Summary{Cases: 1, Verdict: results.VerdictPassed, Passed: true, Metrics: []results.MetricSummary{{Metric: "m", Kind: "geval", N: 1}}}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 100<<10 || !strings.Contains(string(got), "too large for the report") {
		t.Errorf("huge details not capped: %d bytes", len(got))
	}
}

func TestHTMLDetailsJSONReadable(t *testing.T) {
	s := &results.Summary{Cases: 1, Verdict: results.VerdictPassed, Passed: true, Metrics: []results.MetricSummary{{Metric: "m", Kind: "k", N: 1}}}
	cases := []results.CaseResult{{CaseID: "a", Metrics: []results.MetricResult{{Metric: "m", Kind: "k", Status: results.StatusPassed,
		Details: json.RawMessage(`{"z":"\u003cb\u003e \u0026","a":"\\u003c kept"}`)}}}}
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	// Key order kept, encoding/json's HTML escapes undone, a literal
	// backslash-u left alone; the page escapes for HTML.
	want := "<pre>{\n  &#34;z&#34;: &#34;&lt;b&gt; &amp;&#34;,\n  &#34;a&#34;: &#34;\\\\u003c kept&#34;\n}</pre>"
	if !strings.Contains(b.String(), want) {
		t.Errorf("details JSON not rendered as %q:\n%s", want, b.String())
	}
}
