package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The onboarding commands as a new user meets them: init, validate,
// estimate and run on what init wrote; config discovery; version;
// completion; unknown commands and flags; --json for scripts.

// initDir runs `init --template tmpl --dir sub` in a fresh directory and
// returns that directory.
func initDir(t *testing.T, tmpl, sub string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	if r := runBinary(t, dir, nil, "init", "--template", tmpl, "--dir", sub); r.code != exitOK {
		t.Fatalf("init %s: exit %d\n%s%s", tmpl, r.code, r.stdout, r.stderr)
	}
	return dir
}

func decodeJSON[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return v
}

// TestInitTemplates: each template is written as embedded, validates
// (no key needed), estimates, and — without a key — runs to exit 3 with
// the message on how to set it, as init's own output says.
func TestInitTemplates(t *testing.T) {
	for _, tc := range []struct {
		tmpl    string
		cases   int
		metrics []string
	}{
		{"geval", 5, []string{"correctness", "helpfulness"}},
		{"dag", 4, []string{"answer_quality"}},
		{"rag", 4, []string{"answer_relevancy", "faithfulness"}},
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			if buildErr != nil {
				t.Fatal(buildErr)
			}
			dir := t.TempDir()
			r := runBinary(t, dir, nil, "init", "--template", tc.tmpl, "--dir", "ev")
			cfg := filepath.Join("ev", "anvil.yaml")
			for _, want := range []string{"wrote " + cfg + " (template " + tc.tmpl + ")",
				"wrote " + filepath.Join("ev", "cases.jsonl") + " (" + strconv.Itoa(tc.cases) + " cases)",
				"next: set OPENAI_API_KEY", "anvil-host run -c " + cfg, "exits 3"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("init output lacks %q:\n%s", want, r.stdout)
				}
			}
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("init: exit %d, stderr %q", r.code, r.stderr)
			}
			for _, f := range initFiles {
				want, _ := templatesFS.ReadFile("templates/" + tc.tmpl + "/" + f)
				if got := mustRead(t, filepath.Join(dir, "ev", f)); string(got) != string(want) {
					t.Errorf("%s differs from the embedded template", f)
				}
			}

			r = runBinary(t, dir, nil, "validate", "-c", cfg, "--json")
			rep := decodeJSON[validateReport](t, r)
			if r.code != exitOK || !rep.OK || rep.Config != cfg || len(rep.ConfigHash) != 16 || len(rep.Errors) != 0 || len(rep.Warnings) != 0 {
				t.Fatalf("validate: exit %d, report %+v\n%s", r.code, rep, r.stderr)
			}
			var names []string
			for _, m := range rep.Metrics {
				names = append(names, m.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.metrics, ",") {
				t.Errorf("metrics = %v, want %v", names, tc.metrics)
			}
			if rep.Dataset == nil || rep.Dataset.Cases != tc.cases || len(rep.Dataset.FieldGaps) != 0 ||
				rep.Dataset.Path != filepath.Join("ev", "cases.jsonl") {
				t.Errorf("dataset = %+v, want %d cases and no gaps", rep.Dataset, tc.cases)
			}

			// estimate runs every metric's own code on a dry-run judge.
			r = runBinary(t, dir, nil, "estimate", "-c", cfg, "--json")
			est := decodeJSON[engine.EstimateReport](t, r)
			if r.code != exitOK || est.Total.Cases != tc.cases || est.Total.JudgeCalls < tc.cases || est.Total.USD <= 0 {
				t.Fatalf("estimate: exit %d, total %+v\n%s", r.code, est.Total, r.stderr)
			}

			r = runBinary(t, dir, nil, "run", "-c", cfg, "-o", "out", "--no-progress")
			if r.code != exitUnverified || !strings.Contains(r.stderr, "could not verify") ||
				!strings.Contains(r.stdout, "no API key in $OPENAI_API_KEY") {
				t.Fatalf("run without a key: exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestInitNeverOverwrites: existing files stop init (exit 2, naming each)
// before anything is written; --force replaces them.
func TestInitNeverOverwrites(t *testing.T) {
	dir := initDir(t, "geval", ".")
	mine := []byte("# my own config\n")
	os.WriteFile(filepath.Join(dir, "anvil.yaml"), mine, 0o644)
	r := runBinary(t, dir, nil, "init", "--template", "dag")
	if r.code != exitUsage || !strings.Contains(r.stderr, "anvil.yaml and cases.jsonl already exist") || r.stdout != "" {
		t.Fatalf("init over both files: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := mustRead(t, filepath.Join(dir, "anvil.yaml")); string(got) != string(mine) {
		t.Fatalf("anvil.yaml was overwritten: %q", got)
	}
	// Only the dataset exists: refused too, and the config is not written.
	os.Remove(filepath.Join(dir, "anvil.yaml"))
	r = runBinary(t, dir, nil, "init")
	if r.code != exitUsage || !strings.Contains(r.stderr, "cases.jsonl already exists") || strings.Contains(r.stderr, "anvil.yaml") {
		t.Fatalf("init over cases.jsonl: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "anvil.yaml")); !os.IsNotExist(err) {
		t.Fatalf("init wrote anvil.yaml although it refused: %v", err)
	}
	r = runBinary(t, dir, nil, "init", "--template", "dag", "--force")
	want, _ := templatesFS.ReadFile("templates/dag/anvil.yaml")
	if r.code != exitOK || string(mustRead(t, filepath.Join(dir, "anvil.yaml"))) != string(want) ||
		!strings.Contains(r.stdout, "anvil-host run ") || strings.Contains(r.stdout, " -c ") {
		t.Fatalf("init --force: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "init", "--template", "bogus", "--dir", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, `--template "bogus": want one of geval, dag, rag`) {
		t.Fatalf("init --template bogus: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a refused init created its directory: %v", err)
	}
}

// TestInitGEvalAgainstAJudge: the geval template against the fake judge,
// with --json: the deliberately bad case fails the gate (exit 1), stdout
// is the summary and nothing else; without that case the run passes.
func TestInitGEvalAgainstAJudge(t *testing.T) {
	dir := initDir(t, "geval", ".")
	srv := judgetest.New(t)
	geval(srv) // scores "Sydney is the capital" low, everything else high
	r := runBinary(t, dir, judgeEnv(srv), "run", "--json", "-o", "out", "--no-progress")
	s := decodeJSON[results.Summary](t, r)
	if r.code != exitThreshold || s.Verdict != results.VerdictFailed || s.Cases != 5 {
		t.Fatalf("run --json: exit %d, verdict %s, %d cases\n%s", r.code, s.Verdict, s.Cases, r.stderr)
	}
	if c := metricOf(t, s, "correctness"); c.Passed != 4 || c.Failed != 1 || c.ScoreModes["weighted"] != 5 {
		t.Fatalf("correctness = %+v", c)
	}
	if h := metricOf(t, s, "helpfulness"); h.Verdict != results.VerdictInformational || h.Scored != 5 {
		t.Fatalf("helpfulness = %+v", h)
	}
	if onDisk := readSummary(t, filepath.Join(dir, "out", "summary.json")); onDisk.RunID != s.RunID || onDisk.Verdict != s.Verdict {
		t.Fatalf("stdout summary %s/%s differs from summary.json %s/%s", s.RunID, s.Verdict, onDisk.RunID, onDisk.Verdict)
	}
	if strings.Contains(r.stdout, "METRIC") || !strings.Contains(r.stderr, "results: out") {
		t.Fatalf("--json: the table on stdout or no results line on stderr\n%s\n%s", r.stdout, r.stderr)
	}

	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "cases.jsonl")))), "\n") {
		if !strings.Contains(l, `"bad-`) {
			kept = append(kept, l)
		}
	}
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	r = runBinary(t, dir, judgeEnv(srv), "run", "--json", "-o", "out", "--no-progress")
	if s := decodeJSON[results.Summary](t, r); r.code != exitOK || !s.Passed || s.Cases != 4 {
		t.Fatalf("without the bad case: exit %d, %+v\n%s", r.code, s, r.stderr)
	}

	// A run that stops early: the partial summary on stdout, how to resume
	// on stderr, exit 3.
	down := judgetest.New(t, judgetest.WithAPIKey("the-right-key"))
	r = runBinary(t, dir, []string{"OPENAI_BASE_URL=" + down.URL(), "OPENAI_API_KEY=a-wrong-key"}, "run", "--json", "--cache", "off", "-o", "down", "--no-progress")
	if s := decodeJSON[results.Summary](t, r); r.code != exitUnverified || s.Verdict != results.VerdictIncomplete || s.Incomplete == nil ||
		!strings.Contains(r.stderr, "resume with:") {
		t.Fatalf("run --json, judge refusing the key: exit %d, verdict %s\n%s", r.code, s.Verdict, r.stderr)
	}
	// Nothing evaluated: nothing on stdout.
	if r = runBinary(t, dir, nil, "run", "--json", "--limit", "0"); r.code != exitUsage || r.stdout != "" {
		t.Fatalf("run --json --limit 0: exit %d, stdout %q", r.code, r.stdout)
	}

	// cache stats --json finds the store of ./anvil.yaml.
	r = runBinary(t, dir, nil, "cache", "stats", "--json")
	st := decodeJSON[cacheStats](t, r)
	if r.code != exitOK || st.Store != filepath.Join(".anvil", "store.db") || st.Entries == 0 || st.Bytes == 0 || st.ByModel["gpt-4o-mini"] != st.Entries {
		t.Fatalf("cache stats --json: exit %d, %+v", r.code, st)
	}
}

// TestInitDAGAgainstAJudge: the dag template walks the paths its comments
// promise: the off-topic answer stops at the first node with 0, a minor
// error scores 0.6 (passing at the threshold), and render shows the path.
func TestInitDAGAgainstAJudge(t *testing.T) {
	dir := initDir(t, "dag", ".")
	srv := judgetest.New(t)
	onTopic := judgetest.ContainsMessage("address the question asked")
	srv.On(judgetest.All(onTopic, judgetest.ContainsMessage("stores open")), judgetest.Reply{Content: `{"reason": "It talks about opening hours.", "verdict": false}`})
	srv.On(onTopic, judgetest.Reply{Content: `{"reason": "It answers.", "verdict": true}`})
	srv.On(judgetest.ContainsMessage("List every factual claim"), judgetest.Reply{Content: `{"output": "C1: the answer's claim"}`})
	accuracy := judgetest.ContainsMessage("how accurate are the claims")
	srv.On(judgetest.All(accuracy, judgetest.ContainsMessage("318 Earth masses")), judgetest.Reply{Content: `{"reason": "The mass is off.", "verdict": "minor_errors"}`})
	srv.On(accuracy, judgetest.Reply{Content: `{"reason": "All agree.", "verdict": "all_correct"}`})

	r := runBinary(t, dir, judgeEnv(srv), "run", "-o", "out", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("dag template run: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	scores := map[string]float64{}
	for _, cr := range resultLines(t, filepath.Join(dir, "out", "results.jsonl")) {
		if m := cr.Metrics[0]; m.Score != nil {
			scores[cr.CaseID] = *m.Score
		}
	}
	want := map[string]float64{"capital-fr": 1, "boiling-point": 1, "largest-planet": 0.6, "bad-off-topic": 0}
	for id, w := range want {
		if got, ok := scores[id]; !ok || got != w {
			t.Errorf("case %s: score %v (scored %v), want %v", id, got, ok, w)
		}
	}
	// 3 on-topic cases × 3 nodes + 1 off-topic × 1 node.
	if srv.Calls() != 10 {
		t.Errorf("judge calls = %d, want 10", srv.Calls())
	}
	r = runBinary(t, dir, nil, "dag", "render", "--results", filepath.Join("out", "results.jsonl"), "--case", "bad-off-topic")
	if r.code != exitOK || !strings.Contains(r.stdout, "class n0,n0_0 taken") {
		t.Fatalf("dag render: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestReportDAGCommandWorksInTheOutputDir: report.html tells the reader to
// run `anvil-host dag render … --results results.jsonl`, a path relative to
// the output directory, where there is no config: the command names the
// config the run used by a path from there, and works there as printed.
func TestReportDAGCommandWorksInTheOutputDir(t *testing.T) {
	dir := initDir(t, "dag", "evals")
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage("address the question asked"), judgetest.Reply{Content: `{"reason": "It does not.", "verdict": false}`})

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", filepath.Join("evals", "anvil.yaml"), "-o", filepath.Join("evals", "out"), "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("run: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "evals", "out", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	commands := regexp.MustCompile(`anvil-host (dag render [^<]*)`).FindAllStringSubmatch(string(page), -1)
	if len(commands) == 0 {
		t.Fatal("report.html names no dag render command")
	}
	want := "dag render answer_quality --results results.jsonl --case capital-fr -c ../anvil.yaml"
	found := false
	for _, c := range commands {
		found = found || c[1] == want
	}
	if !found {
		t.Fatalf("report.html's dag render commands %q; want one %q", commands, want)
	}
	r = runBinary(t, filepath.Join(dir, "evals", "out"), nil, strings.Fields(want)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "flowchart") {
		t.Fatalf("the report's command in the output directory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestNoKeySaidOnce: a judge without a key is explained once per run,
// table or --json, not again in every skip note and verdict line; a run
// whose metrics need no judge does not mention the key at all.
func TestNoKeySaidOnce(t *testing.T) {
	const advice = "set it, or point OPENAI_BASE_URL at a local OpenAI-compatible server"
	judged := initDir(t, "geval", ".")
	unjudged := quickstart(t)
	cfg := "version: 1\ndataset: cases.jsonl\njudges:\n  default: {api_key_env: OPENAI_API_KEY}\n" +
		"plugins:\n  textcheck: {path: " + filepath.Join(wasmDir, "textcheck.wasm") + ", sha256_file: " + filepath.Join(wasmDir, "textcheck.wasm.sha256") + "}\n" +
		"defaults: {judge: default}\nmetrics:\n  - {name: exact, kind: exact_match, gate: false, params: {ignore_case: true, trim: true}}\n"
	if err := os.WriteFile(filepath.Join(unjudged, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dir      string
		args     []string
		code     int
		stdout   int // times the advice is in stdout
		stderr   int
		mentions bool // whether OPENAI_API_KEY is named at all
	}{
		{"table", judged, nil, exitUnverified, 1, 0, true},
		{"--json", judged, []string{"--json"}, exitUnverified, -1, 1, true},
		{"no metric needs a judge", unjudged, nil, exitOK, 0, 0, false},
		{"no metric needs a judge, --json", unjudged, []string{"--json"}, exitOK, -1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, tc.dir, nil, append([]string{"run", "-o", "out-" + strings.ReplaceAll(tc.name, " ", "_"), "--no-progress"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			// With --json stdout is the summary, data that keeps every reason.
			if n := strings.Count(r.stdout, advice); tc.stdout >= 0 && n != tc.stdout {
				t.Errorf("stdout says it %d times, want %d:\n%s", n, tc.stdout, r.stdout)
			}
			if n := strings.Count(r.stderr, advice); n != tc.stderr {
				t.Errorf("stderr says it %d times, want %d:\n%s", n, tc.stderr, r.stderr)
			}
			out := r.stderr
			if tc.stdout >= 0 {
				out += r.stdout
			}
			if got := strings.Contains(out, "OPENAI_API_KEY"); got != tc.mentions {
				t.Errorf("names OPENAI_API_KEY: %v, want %v\n%s\n%s", got, tc.mentions, r.stdout, r.stderr)
			}
		})
	}
}

// TestConfigDiscovery: -c, else $ANVIL_CONFIG, else ./anvil.yaml, for
// every command that reads a config; with none, an error naming all three.
func TestConfigDiscovery(t *testing.T) {
	dir := initDir(t, "geval", ".")
	if r := runBinary(t, dir, nil, "init", "--template", "dag", "--dir", "other"); r.code != exitOK {
		t.Fatalf("init other: exit %d\n%s", r.code, r.stderr)
	}
	other := filepath.Join("other", "anvil.yaml")
	env := []string{"ANVIL_CONFIG=" + other}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // validate's first line starts with the config read
	}{
		{"./anvil.yaml", nil, nil, "anvil.yaml: ok (2 metrics"},
		{"$ANVIL_CONFIG over ./anvil.yaml", env, nil, other + ": ok (1 metrics"},
		{"-c over $ANVIL_CONFIG", env, []string{"-c", "anvil.yaml"}, "anvil.yaml: ok (2 metrics"},
	} {
		r := runBinary(t, dir, tc.env, append([]string{"validate"}, tc.args...)...)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, tc.want) {
			t.Errorf("%s: exit %d\n%s%s", tc.name, r.code, r.stdout, r.stderr)
		}
	}
	// The same rule for dag render, estimate and cache.
	if r := runBinary(t, dir, env, "dag", "render"); r.code != exitOK || !strings.Contains(r.stdout, "on_topic") {
		t.Errorf("dag render via $ANVIL_CONFIG: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, env, "estimate", "--json"); r.code != exitOK || decodeJSON[engine.EstimateReport](t, r).Metrics[0].Metric != "answer_quality" {
		t.Errorf("estimate via $ANVIL_CONFIG: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, env, "cache", "stats", "--json"); r.code != exitOK || decodeJSON[cacheStats](t, r).Store != filepath.Join("other", ".anvil", "store.db") {
		t.Errorf("cache stats via $ANVIL_CONFIG: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runBinary(t, dir, []string{"ANVIL_CONFIG=missing.yaml"}, "validate")
	if r.code != exitUsage || !strings.Contains(r.stderr, "$ANVIL_CONFIG=missing.yaml: no such file") {
		t.Errorf("$ANVIL_CONFIG naming no file: exit %d\n%s", r.code, r.stderr)
	}

	// None of the three: every command says all three.
	empty := t.TempDir()
	for _, args := range [][]string{{"run"}, {"estimate"}, {"validate"}, {"dag", "render"}} {
		r := runBinary(t, empty, nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "none given with -c, $ANVIL_CONFIG is not set, and there is no ./anvil.yaml") {
			t.Errorf("%v without a config: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// cache needs a config only for the store: the default one.
	if r := runBinary(t, empty, nil, "cache", "stats", "--json"); r.code != exitOK || decodeJSON[cacheStats](t, r).Store != filepath.Join(".anvil", "store.db") {
		t.Errorf("cache stats without a config: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, empty, []string{"ANVIL_CONFIG=missing.yaml"}, "cache", "stats"); r.code != exitUsage || !strings.Contains(r.stderr, "$ANVIL_CONFIG") {
		t.Errorf("cache stats with $ANVIL_CONFIG naming no file: exit %d\n%s", r.code, r.stderr)
	}
}

// TestUnknownCommandsAndFlags: a typo, an unknown flag or a bare group is
// a usage error (exit 2, a message on stderr, nothing on stdout); asking
// for help is not.
func TestUnknownCommandsAndFlags(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "anvil-host"`},
		{[]string{"plugn"}, "did you mean plugin?"},
		{[]string{"plugin", "bogus"}, `unknown command "bogus" for "anvil-host plugin"`},
		{[]string{"cache", "bogus"}, `unknown command "bogus" for "anvil-host cache"`},
		{[]string{"dag", "bogus"}, `unknown command "bogus" for "anvil-host dag"`},
		{[]string{"completion", "bogus"}, `unknown command "bogus" for "anvil-host completion"`},
		{[]string{"help", "bogus"}, `unknown help topic "bogus"`},
		{[]string{"help", "plugin", "bogus"}, `unknown help topic "plugin bogus"`},
		{[]string{"run", "--bogus"}, "run: unknown flag: --bogus (see `anvil-host run --help`)"},
		{[]string{"cache", "stats", "--bogus"}, "cache stats: unknown flag: --bogus"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "extra"}, `unknown command "extra" for "anvil-host run"`},
		{[]string{"version", "--json=maybe"}, "invalid argument"},
		{nil, "name a command (cache, calibrate, compare, completion, dag, estimate, init, lock, plugin, run, validate, version, worker)"},
		{[]string{"plugin"}, "plugin: name a command (call, info, inspect, keygen, ls, new, publish, pull, push, search, sign, test, verify)"},
		{[]string{"cache"}, "cache: name a command (clear, export, stats)"},
	} {
		r := runBinary(t, dir, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%q: exit %d, want 2 and %q on stderr\nstdout: %q\nstderr: %q", tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}
	// A bare group's help goes to stderr with the error.
	if r := runBinary(t, dir, nil, "plugin"); !strings.Contains(r.stderr, "Available Commands:") {
		t.Errorf("bare plugin: no help on stderr\n%s", r.stderr)
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"help", "plugin"}, {"plugin", "--help"}, {"init", "--help"}} {
		r := runBinary(t, dir, nil, args...)
		if r.code != exitOK || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("%q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestCompletion: cobra's completion scripts, and the dynamic completions
// they call for subcommands and flag values.
func TestCompletion(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	for shell, want := range map[string]string{
		"bash":       "complete -o default -F __start_anvil-host anvil-host",
		"zsh":        "#compdef anvil-host",
		"fish":       "complete -c anvil-host",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := runBinary(t, dir, nil, "completion", shell)
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, lacks %q\n%s", shell, r.code, want, r.stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "cache", ""}, []string{"clear", "export", "stats"}},
		{[]string{"__complete", "init", "--template", ""}, []string{"geval", "dag", "rag"}},
		{[]string{"__complete", "run", "--cache", ""}, []string{"off", "rw", "replay"}},
	} {
		r := runBinary(t, dir, nil, tc.args...)
		var got []string
		for _, l := range strings.Split(r.stdout, "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
		}
		if r.code != exitOK || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: exit %d, completions %v, want %v", tc.args, r.code, got, tc.want)
		}
	}
}

// TestVersion: the binary reports its build: module, version ("(devel)"
// when the go command stamped none), Go, the ABI; --version is one line.
func TestVersion(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	r := runBinary(t, dir, nil, "version", "--json")
	v := decodeJSON[versionInfo](t, r)
	if r.code != exitOK || v.Module != "github.com/agentanvil/anvil" || v.Version == "" || v.Go != runtime.Version() ||
		v.Platform != runtime.GOOS+"/"+runtime.GOARCH || v.ABI.Major != abi.Major || v.ABI.Minor != abi.Minor ||
		v.ABI.WasmMarker != "anvil_abi_v1" || v.ABI.ProcessProtocol != abi.Major || v.ConfigVersion != 1 || v.RecordingFormat != engine.RecordingVersion {
		t.Fatalf("version --json: exit %d, %+v", r.code, v)
	}
	if v.Commit != "" && !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(v.Commit) {
		t.Errorf("commit %q is not a git revision", v.Commit)
	}
	r = runBinary(t, dir, nil, "version")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "anvil-host "+v.Version+"\n") || !strings.Contains(r.stdout, "abi        v"+hostABI+" (Wasm marker anvil_abi_v1; process plugins: protocol 1)") {
		t.Errorf("version: exit %d\n%s", r.code, r.stdout)
	}
	r = runBinary(t, dir, nil, "--version")
	if r.code != exitOK || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "anvil-host "+v.Version+" (") || !strings.Contains(r.stdout, "ABI v"+hostABI+")") {
		t.Errorf("--version: exit %d %q", r.code, r.stdout)
	}
}

// TestBuildVersion: what the build information says, and what it does
// not say.
func TestBuildVersion(t *testing.T) {
	v := buildVersion(nil)
	if v.Version != "(devel)" || v.Commit != "" || v.Module != modulePath || v.ABI.Version != hostABI {
		t.Fatalf("no build info: %+v", v)
	}
	if s := versionString(nil); !strings.Contains(s, "(devel) (unknown commit, ") {
		t.Errorf("versionString(nil) = %q", s)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: modulePath, Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	v = buildVersion(bi)
	if v.Version != "v1.2.3" || v.Go != "go1.99.1" || v.Commit != "0123456789abcdef0123456789abcdef01234567" ||
		v.CommitTime != "2026-01-02T03:04:05Z" || !v.Modified {
		t.Fatalf("stamped build: %+v", v)
	}
	if s := versionString(bi); s != "anvil-host v1.2.3 (commit 0123456789ab+modified, go1.99.1, ABI v"+hostABI+")" {
		t.Errorf("versionString = %q", s)
	}
	bi.Main.Version = "(devel)"
	bi.Settings = bi.Settings[:2]
	if v := buildVersion(bi); v.Version != "(devel)" || v.Modified || v.CommitTime != "" {
		t.Errorf("devel build: %+v", v)
	}
}

// TestInstalledVersion: a binary from `go install …@VERSION` is built from
// the module cache and carries no VCS stamp; version still says which
// commit it is — the one tagged VERSION, or the one a pseudo-version names.
func TestInstalledVersion(t *testing.T) {
	for _, tc := range []struct {
		version, commit, source, line, text string
	}{
		{"v0.1.0", "", "", "anvil-host v0.1.0 (tagged v0.1.0, go1.99.1, ABI v" + hostABI + ")",
			"  commit     the one tagged v0.1.0 (a go install build carries no VCS stamp)\n"},
		{"v0.2.0-rc.1", "", "", "anvil-host v0.2.0-rc.1 (tagged v0.2.0-rc.1, go1.99.1, ABI v" + hostABI + ")",
			"  commit     the one tagged v0.2.0-rc.1 (a go install build carries no VCS stamp)\n"},
		{"v0.0.0-20260102030405-0123456789ab", "0123456789ab", "pseudo-version",
			"anvil-host v0.0.0-20260102030405-0123456789ab (commit 0123456789ab, go1.99.1, ABI v" + hostABI + ")",
			"  commit     0123456789ab (named by the pseudo-version; a go install build carries no VCS stamp)\n"},
		{"(devel)", "", "", "anvil-host (devel) (unknown commit, go1.99.1, ABI v" + hostABI + ")",
			"  commit     unknown (built without VCS information)\n"},
	} {
		bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: modulePath, Version: tc.version}}
		v := buildVersion(bi)
		if v.Version != tc.version || v.Commit != tc.commit || v.CommitSource != tc.source {
			t.Errorf("%s: %+v", tc.version, v)
		}
		if s := versionString(bi); s != tc.line {
			t.Errorf("%s: versionString = %q, want %q", tc.version, s, tc.line)
		}
		var b strings.Builder
		if err := writeVersion(&b, v); err != nil || !strings.Contains(b.String(), tc.text) {
			t.Errorf("%s: version says\n%s\nwant %q", tc.version, b.String(), tc.text)
		}
	}
	// A checkout's VCS stamp wins over what a version could say.
	bi := &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20260102030405-0123456789ab"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210fedcba9876543210fedcba98"}}}
	if v := buildVersion(bi); v.Commit != "fedcba9876543210fedcba9876543210fedcba98" || v.CommitSource != "vcs" {
		t.Errorf("stamped pseudo-version build: %+v", v)
	}
}

// TestRequirableVersion: which build versions a scaffold's go.mod can
// require.
func TestRequirableVersion(t *testing.T) {
	for _, tc := range []struct {
		path, version, want string
	}{
		{modulePath, "v0.1.0", "v0.1.0"},
		{modulePath, "v1.4.0-rc.2", "v1.4.0-rc.2"},
		{modulePath, "v0.0.0-20260102030405-0123456789ab", "v0.0.0-20260102030405-0123456789ab"},
		{modulePath, "v0.0.0-20260102030405-0123456789ab+dirty", ""}, // local changes no proxy has
		{modulePath, "(devel)", ""},
		{modulePath, "", ""},
		{modulePath, "v2.0.0", ""}, // would need the module path /v2
		{"example.com/embedder", "v1.0.0", ""},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: tc.path, Version: tc.version}}
		if got := requirableVersion(bi); got != tc.want {
			t.Errorf("%s@%s: %q, want %q", tc.path, tc.version, got, tc.want)
		}
	}
	if got := requirableVersion(nil); got != "" {
		t.Errorf("no build info: %q", got)
	}
}

// TestValidateJSON: the report of a config with a Wasm plugin, and of a
// config that does not load.
func TestValidateJSON(t *testing.T) {
	dir := quickstart(t)
	r := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--json")
	rep := decodeJSON[validateReport](t, r)
	if r.code != exitOK || !rep.OK || rep.Dataset == nil || rep.Dataset.Cases != 12 || len(rep.Metrics) != 3 {
		t.Fatalf("validate --json: exit %d, %+v\n%s", r.code, rep, r.stderr)
	}
	pin := strings.Fields(string(mustRead(t, filepath.Join(wasmDir, "textcheck.wasm.sha256"))))[0]
	if len(rep.Plugins) != 1 || rep.Plugins[0].Name != "textcheck" || rep.Plugins[0].Transport != "wasm" ||
		rep.Plugins[0].SHA256 != "sha256:"+pin || rep.Plugins[0].Isolation != nil {
		t.Fatalf("plugins = %+v, want textcheck pinned at %s", rep.Plugins, pin)
	}
	if m := rep.Metrics[2]; m.Name != "exact" || m.Kind != "exact_match" || m.Gate || m.Threshold != 0.5 {
		t.Errorf("metric exact = %+v", m)
	}
	text := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml")
	if !strings.Contains(text.stdout, "config hash "+rep.ConfigHash) {
		t.Errorf("text and JSON disagree on the hash %s:\n%s", rep.ConfigHash, text.stdout)
	}

	bad := strings.Replace(string(mustRead(t, filepath.Join(dir, "anvil.yaml"))), "threshold: 0.6", "treshold: 0.6", 1)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)
	r = runBinary(t, dir, nil, "validate", "-c", "bad.yaml", "--json")
	rep = decodeJSON[validateReport](t, r)
	if r.code != exitUsage || rep.OK || rep.Config != "bad.yaml" || len(rep.Errors) == 0 ||
		!strings.Contains(rep.Errors[0], "bad.yaml:") || !strings.Contains(rep.Errors[0], "treshold") {
		t.Fatalf("validate --json on a bad config: exit %d, %+v", r.code, rep)
	}
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"id\": \"a\", \"input\": 3}\n"), 0o644)
	r = runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--input", "bad.jsonl", "--json")
	rep = decodeJSON[validateReport](t, r)
	if r.code != exitUsage || rep.OK || rep.ConfigHash == "" || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "bad.jsonl:1") {
		t.Fatalf("validate --json on a bad dataset: exit %d, %+v", r.code, rep)
	}
}

// hostABI is the ABI version the host speaks, as version prints it.
var hostABI = fmt.Sprintf("%d.%d", abi.Major, abi.Minor)
