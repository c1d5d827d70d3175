package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

var updateRecording = flag.Bool("update-recording", false,
	"re-record examples/quickstart/judge-session.jsonl against the fake judge server")

// recordingNote labels the quickstart's recorded session in every run that
// replays it.
const recordingNote = "recorded against Anvil's own fake judge server (scripted replies, not a model)"

// recordQuickstart runs the quickstart's two datasets against the fake
// judge server with a fresh store and exports that store as the recorded
// session the example ships.
func recordQuickstart(t *testing.T) {
	dir := quickstart(t)
	srv := judgetest.New(t)
	geval(srv)
	store := filepath.Join(dir, "record.db")
	for _, input := range []string{"cases.jsonl", "cases-regressed.jsonl"} {
		r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "--store", store, "--input", input, "-o", "rec-"+input, "--no-progress")
		if r.code != exitOK && r.code != exitThreshold {
			t.Fatalf("recording %s: exit %d\n%s", input, r.code, r.stderr)
		}
	}
	dst, err := filepath.Abs("../../../examples/quickstart/judge-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, nil, "cache", "export", "--store", store, "--note", recordingNote, "-o", dst)
	if r.code != exitOK {
		t.Fatalf("cache export: exit %d\n%s", r.code, r.stderr)
	}
}

// TestQuickstartRecording runs README's main command as a new user would
// on a machine with no judge key: the recorded session answers, the run
// says so, the gate passes, and the report is written. If this fails after
// a change to prompts or the cache key, re-record with
//
//	go test ./host/internal/cli -run TestQuickstartRecording -update-recording
func TestQuickstartRecording(t *testing.T) {
	if *updateRecording {
		recordQuickstart(t)
	}
	dir := quickstart(t)
	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	if r.code != exitOK {
		t.Fatalf("offline quickstart: exit %d, want 0 (re-record with -update-recording if prompts changed)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"REPLAYED from judge-session.jsonl", recordingNote, "set $OPENAI_API_KEY to call the real judge", "weighted:12", "PASSED"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("offline table lacks %q:\n%s", want, r.stdout)
		}
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if len(s.Judges) != 1 || s.Judges[0].Source != "recording" || !strings.Contains(s.Judges[0].Note, recordingNote) {
		t.Fatalf("summary judges = %+v, want the recording named", s.Judges)
	}
	if c := metricOf(t, s, "correctness"); c.Scored != 12 || c.ScoreModes["weighted"] != 12 || *c.Mean != 0.79 || s.Judge.Calls != 0 {
		t.Fatalf("correctness offline = %+v (judge %+v)", c, s.Judge)
	}
	if len(s.Prepare) == 0 || !strings.Contains(string(s.Prepare[0].Details), "Compare with the expected output.") {
		t.Fatalf("prepare = %+v, want the recorded G-Eval steps", s.Prepare)
	}
	html, err := os.ReadFile(filepath.Join(dir, "out", "report.html"))
	if err != nil || !strings.Contains(string(html), "REPLAYED") {
		t.Fatalf("report.html does not say the judge was replayed: %v", err)
	}

	// The regressed dataset, offline: the gate catches it.
	r = runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "--input", "cases-regressed.jsonl", "-o", "regressed", "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("offline regressed: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// With a key the real judge is called and the recording is not read.
	srv := judgetest.New(t)
	geval(srv)
	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "live", "--cache", "off", "--no-progress")
	live := readSummary(t, filepath.Join(dir, "live", "summary.json"))
	if r.code != exitOK || srv.Calls() != 25 || live.Judges[0].Source != "api" || strings.Contains(r.stdout, "REPLAYED") {
		t.Fatalf("with a key: exit %d, %d calls, judges %+v\n%s", r.code, srv.Calls(), live.Judges, r.stdout)
	}
}

// TestCorruptStore: a run on a store that cannot be read goes on without
// the cache and says so in summary.json; `cache clear` resets it; the
// store is found by the same rule by run and cache.
func TestCorruptStore(t *testing.T) {
	dir := quickstart(t)
	store := filepath.Join(dir, ".anvil", "store.db")
	os.MkdirAll(filepath.Dir(store), 0o755)
	garbage := []byte(strings.Repeat("not a database ", 200))
	if err := os.WriteFile(store, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress")
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if r.code != exitOK || s.Cache == nil || !strings.Contains(s.Cache.Error, "unusable") || !strings.Contains(r.stdout, "cache clear") {
		t.Fatalf("run on a corrupt store: exit %d, cache %+v\n%s\n%s", r.code, s.Cache, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "cache", "stats")
	if r.code != exitUnverified || !strings.Contains(r.stderr, "cache clear") {
		t.Fatalf("cache stats on a corrupt store: exit %d\n%s", r.code, r.stderr)
	}
	r = runBinary(t, dir, nil, "cache", "clear")
	if r.code != exitOK || !strings.Contains(r.stdout, "removed it") {
		t.Fatalf("cache clear on a corrupt store: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The next run records into a fresh store, which cache finds by the same rule.
	if r = runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress"); r.code != exitOK {
		t.Fatalf("run after clear: exit %d\n%s", r.code, r.stderr)
	}
	if s := readSummary(t, filepath.Join(dir, "out", "summary.json")); s.Cache != nil {
		t.Fatalf("cache report after clear = %+v", s.Cache)
	}
	r = runBinary(t, dir, nil, "cache", "stats", "-c", "anvil.yaml")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, filepath.Join(".anvil", "store.db")+":") {
		t.Fatalf("cache stats: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestInterruptExits130 sends SIGINT mid-run: the process exits 130, keeps
// the finished cases, and leaves a summary marked incomplete that says how
// to resume.
func TestInterruptExits130(t *testing.T) {
	dir := quickstart(t)
	srv, hung := hangingGEval(t, 6)
	cmd := exec.Command(binary, "run", "-c", "anvil.yaml", "-o", "out", "--cache", "off", "--concurrency", "2", "--no-progress")
	cmd.Dir = dir
	cmd.Env = append(baseEnv(dir), judgeEnv(srv)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-hung
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d\n%s", err, exitInterrupted, stdout.String())
	}
	s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
	if s.Verdict != "incomplete" || s.Incomplete == nil || !strings.Contains(s.Incomplete.Resume, "--resume") || s.Cases == 0 || s.Cases >= 12 {
		t.Fatalf("summary after interrupt: verdict %s, incomplete %+v, %d cases", s.Verdict, s.Incomplete, s.Cases)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "junit.xml")); !os.IsNotExist(err) {
		t.Fatalf("an interrupted run wrote junit.xml (CI would read it as a result): %v", err)
	}
	if !strings.Contains(stdout.String(), "resume with:") {
		t.Fatalf("stdout does not say how to resume:\n%s", stdout.String())
	}
}
