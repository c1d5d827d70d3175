package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit"
)

// The GitHub Action (action.yml) and its scripts (scripts/action), run
// here as its steps run on a runner: GITHUB_OUTPUT, GITHUB_PATH and
// GITHUB_STEP_SUMMARY are temp files whose content is checked.

const repoRoot = "../../.."

// actionEnv is a runner's environment for one step: PATH with the test's
// anvil-host first, and the files GitHub gives a step.
type actionEnv struct {
	dir                   string
	output, path, summary string
	extra                 []string
}

func newActionEnv(t *testing.T, dir string) *actionEnv {
	t.Helper()
	e := &actionEnv{dir: dir, output: filepath.Join(t.TempDir(), "output"), path: filepath.Join(t.TempDir(), "path"),
		summary: filepath.Join(t.TempDir(), "summary.md")}
	return e
}

func (e *actionEnv) run(t *testing.T, script string, env ...string) (code int, stdout string) {
	t.Helper()
	name := filepath.Join(repoRoot, "scripts", "action", script)
	abs, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if strings.HasSuffix(script, ".py") {
		cmd = exec.Command("python3", abs)
	} else {
		cmd = exec.Command(abs)
	}
	cmd.Dir = e.dir
	cmd.Env = append(append(baseEnv(e.dir),
		"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GITHUB_OUTPUT="+e.output, "GITHUB_PATH="+e.path, "GITHUB_STEP_SUMMARY="+e.summary,
		"GITHUB_WORKSPACE="+e.dir, "RUNNER_TEMP="+t.TempDir()), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return 0, out.String()
}

func readFileString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// exactConfig is a config with one gated deterministic metric (textcheck's
// exact_match), no judge: cases whose output is the expected one pass.
func exactConfig(t *testing.T, cases string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
dataset: cases.jsonl
plugins:
  textcheck:
    path: %s/textcheck.wasm
    sha256_file: %s/textcheck.wasm.sha256
metrics:
  - name: exact
    kind: exact_match
    threshold: 1
    params: {ignore_case: true, trim: true}
`, wasmDir, wasmDir)
	os.MkdirAll(filepath.Join(dir, "evals"), 0o755)
	os.WriteFile(filepath.Join(dir, "evals", "anvil.yaml"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, "evals", "cases.jsonl"), []byte(cases), 0o644)
	return dir
}

const passingCases = `{"id": "fr", "input": "Capital of France?", "actual_output": "Paris", "expected_output": "paris"}
{"id": "it", "input": "Capital of Italy?", "actual_output": "Rome", "expected_output": "Rome"}
`

// failingCases: "au…" fails, on line 3 (after a blank line), with an id
// that tries to break the annotation's properties and to inject Markdown
// and HTML into the job summary.
const failingCases = `{"id": "fr", "input": "Capital of France?", "actual_output": "Paris", "expected_output": "paris"}

{"id": "au,x:y [l](http://e.x) <b>", "input": "Capital of Australia?", "actual_output": "Sydney\n::error::injected", "expected_output": "Canberra"}
`

func TestActionRunAndReport(t *testing.T) {
	testkit.Long(t, "runs the action's scripts (bash, python3) against the built anvil-host")
	for _, tool := range []string{"bash", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the action's scripts need it", tool)
		}
	}
	t.Run("passing", func(t *testing.T) {
		dir := exactConfig(t, passingCases)
		e := newActionEnv(t, dir)
		env := []string{"ANVIL_CONFIG=evals/anvil.yaml", "ANVIL_OUTPUT_DIR=out", "ANVIL_ARGS=--concurrency 2", "ANVIL_MAX_ANNOTATIONS=10", "ANVIL_ARTIFACT=anvil-report",
			"GITHUB_SERVER_URL=https://github.com", "GITHUB_REPOSITORY=o/r", "GITHUB_RUN_ID=7"}
		code, runOut := e.run(t, "run", env...)
		if code != 0 {
			t.Fatalf("run: exit %d\n%s", code, runOut)
		}
		if got := readFileString(t, e.output); got != "exit-code=0\nverdict=passed\noutput-dir=out\n" {
			t.Fatalf("GITHUB_OUTPUT = %q; the run said:\n%s", got, runOut)
		}
		for _, f := range []string{"junit.xml", "report.html", "summary.json"} {
			if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
				t.Errorf("the artifact's %s: %v", f, err)
			}
		}
		code, out := e.run(t, "report.py", env...)
		if code != 0 || strings.Contains(out, "::error") || strings.Contains(out, "::warning") {
			t.Errorf("report.py on a passing run: exit %d\n%s", code, out)
		}
		sum := readFileString(t, e.summary)
		for _, want := range []string{"## ✅ Anvil evaluation: PASSED", "2 cases · 0 judge calls", "| exact | exact\\_match | 2 | 1.000 | 100.0% | 2 | 0 | 0 | 0 | ok |",
			"artifact `anvil-report` in [this run's artifacts](https://github.com/o/r/actions/runs/7#artifacts)"} {
			if !strings.Contains(sum, want) {
				t.Errorf("job summary lacks %q:\n%s", want, sum)
			}
		}
		if strings.Contains(sum, "Failing cases") {
			t.Errorf("a passing run's summary lists failing cases:\n%s", sum)
		}
		if code, out := e.run(t, "gate", "ANVIL_EXIT_CODE=0"); code != 0 {
			t.Errorf("gate after a passing run: exit %d\n%s", code, out)
		}
	})
	t.Run("failing", func(t *testing.T) {
		dir := exactConfig(t, failingCases)
		e := newActionEnv(t, dir)
		env := []string{"ANVIL_CONFIG=evals/anvil.yaml", "ANVIL_OUTPUT_DIR=out", "ANVIL_MAX_ANNOTATIONS=10", "ANVIL_ARTIFACT="}
		if code, out := e.run(t, "run", env...); code != 0 {
			t.Fatalf("run exits 0 whatever the evaluation said, so the reports are uploaded: exit %d\n%s", code, out)
		}
		if got := readFileString(t, e.output); got != "exit-code=1\nverdict=failed\noutput-dir=out\n" {
			t.Errorf("GITHUB_OUTPUT = %q", got)
		}
		code, out := e.run(t, "report.py", env...)
		if code != 0 {
			t.Fatalf("report.py: exit %d\n%s", code, out)
		}
		// One annotation, on the case's line, its id and its text escaped
		// so that nothing ends the command early.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		want := "::error file=evals/cases.jsonl,line=3,title=anvil%3A case au%2Cx%3Ay [l](http%3A//e.x) <b>::exact score 0.000 < threshold 1.000: "
		if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
			t.Fatalf("annotations:\n%s\nwant one starting %q", out, want)
		}
		sum := readFileString(t, e.summary)
		for _, want := range []string{"## ❌ Anvil evaluation: FAILED", "### Failing cases (1)", "| au,x:y \\[l\\]\\(http://e\\.x\\) &lt;b&gt; | exact | failed | 0.000 | 1.000 |",
			"| exact | exact\\_match | 2 | 0.500 | 50.0% | 1 | 1 | 0 | 0 | **FAIL** |"} {
			if !strings.Contains(sum, want) {
				t.Errorf("job summary lacks %q:\n%s", want, sum)
			}
		}
		if strings.Contains(sum, "[l](") || strings.Contains(sum, "<b>") || strings.Contains(sum, "artifact `") {
			t.Errorf("job summary has live Markdown or HTML from the case, or an artifact not uploaded:\n%s", sum)
		}
		// A JSON-array dataset: the line of the case's "id" member.
		os.WriteFile(filepath.Join(dir, "evals", "cases.json"), []byte("[\n  {\"id\": \"fr\"},\n  {\n    \"input\": \"Capital of Australia?\",\n    \"id\": \"au,x:y [l](http://e.x) <b>\"\n  }\n]\n"), 0o644)
		code, out = e.run(t, "report.py", append(env, "ANVIL_DATASET=evals/cases.json")...)
		if code != 0 || !strings.HasPrefix(out, "::error file=evals/cases.json,line=5,title=") {
			t.Errorf("annotation into a JSON array: exit %d\n%s", code, out)
		}
		// At most max-annotations, and a notice of the rest.
		code, out = e.run(t, "report.py", append(env, "ANVIL_MAX_ANNOTATIONS=0")...)
		if code != 0 || strings.Contains(out, "::error") || !strings.Contains(out, "::notice title=anvil::1 failing case(s) are not annotated (max-annotations 0)") {
			t.Errorf("max-annotations 0: exit %d\n%s", code, out)
		}
		if code, out := e.run(t, "gate", "ANVIL_EXIT_CODE=1"); code != 1 {
			t.Errorf("gate after a failing run: exit %d, want 1\n%s", code, out)
		}
		if code, out := e.run(t, "gate", "ANVIL_EXIT_CODE=1", "ANVIL_FAIL_ON=never"); code != 0 || !strings.Contains(out, "reported only") {
			t.Errorf("gate with fail-on never: exit %d\n%s", code, out)
		}
		if code, out := e.run(t, "gate", "ANVIL_EXIT_CODE="); code != 1 || !strings.Contains(out, "left no exit code") {
			t.Errorf("gate without an exit code: exit %d\n%s", code, out)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		dir := t.TempDir()
		e := newActionEnv(t, dir)
		env := []string{"ANVIL_CONFIG=missing.yaml", "ANVIL_OUTPUT_DIR=out"}
		if code, out := e.run(t, "run", env...); code != 0 {
			t.Fatalf("run: exit %d\n%s", code, out)
		}
		if got := readFileString(t, e.output); got != "exit-code=2\nverdict=none\noutput-dir=out\n" {
			t.Errorf("GITHUB_OUTPUT = %q", got)
		}
		code, out := e.run(t, "report.py", env...)
		if code != 0 || !strings.Contains(out, "::error title=anvil::no summary.json in out") || !strings.Contains(readFileString(t, e.summary), "no summary") {
			t.Errorf("report.py without a summary: exit %d\n%s", code, out)
		}
	})
}

// releaseArchive is anvil-host_VERSION_OS_ARCH.tar.gz as GoReleaser
// writes it (.goreleaser.yaml): the binary and LICENSE at its root.
func releaseArchive(t *testing.T, version string) (name string, data []byte) {
	t.Helper()
	name = fmt.Sprintf("anvil-host_%s_%s_%s.tar.gz", version, runtime.GOOS, runtime.GOARCH)
	bin, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
		mode int64
	}{{"LICENSE", []byte("license\n"), 0o644}, {"anvil-host", bin, 0o755}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg})
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return name, buf.Bytes()
}

// releaseDir lays out a release as the action downloads it:
// base/vVERSION/ARCHIVE and checksums.txt (with the archive's sha256, or
// a wrong one).
func releaseDir(t *testing.T, version, name string, archive []byte, corrupt bool) string {
	t.Helper()
	base := t.TempDir()
	rel := filepath.Join(base, "v"+version)
	os.MkdirAll(rel, 0o755)
	os.WriteFile(filepath.Join(rel, name), archive, 0o644)
	sum := sha256.Sum256(archive)
	if corrupt {
		sum[0] ^= 1
	}
	os.WriteFile(filepath.Join(rel, "checksums.txt"), []byte("0000  other_file.tar.gz\n"+hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644)
	return base
}

func TestActionInstall(t *testing.T) {
	testkit.Long(t, "runs the action's install script (bash, curl) against a release laid out as GoReleaser does")
	for _, tool := range []string{"bash", "curl", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the install script needs it", tool)
		}
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if runtime.GOOS == "windows" {
		t.Skip("the test lays out a tar.gz release")
	}
	name, archive := releaseArchive(t, "9.9.9")
	t.Run("checksum matches", func(t *testing.T) {
		e := newActionEnv(t, t.TempDir())
		inst := filepath.Join(t.TempDir(), "inst")
		code, out := e.run(t, "install", "ANVIL_VERSION=v9.9.9", "ANVIL_RELEASE_URL=file://"+releaseDir(t, "9.9.9", name, archive, false), "ANVIL_INSTALL_DIR="+inst)
		if code != 0 || !strings.HasPrefix(out, "anvil-host ") {
			t.Fatalf("install: exit %d\n%s", code, out)
		}
		if got := readFileString(t, e.path); got != inst+"\n" {
			t.Errorf("GITHUB_PATH = %q, want %q", got, inst)
		}
		if got := readFileString(t, e.output); got != "path="+inst+"/anvil-host\n" {
			t.Errorf("GITHUB_OUTPUT = %q", got)
		}
	})
	t.Run("a stalled download is given up and tried again", func(t *testing.T) {
		// The first read of the archive sends half of it and then nothing,
		// holding the connection open, as a stalled server or proxy does;
		// before, curl waited on it for as long as the runner let it.
		files := http.FileServer(http.Dir(releaseDir(t, "9.9.9", name, archive, false)))
		var archiveGets atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/"+name) || archiveGets.Add(1) > 1 {
				files.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
			w.Write(archive[:len(archive)/2]) //nolint:errcheck
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		e := newActionEnv(t, t.TempDir())
		inst := filepath.Join(t.TempDir(), "inst")
		code, out := e.run(t, "install", "ANVIL_VERSION=v9.9.9", "ANVIL_RELEASE_URL="+srv.URL, "ANVIL_INSTALL_DIR="+inst, "ANVIL_DOWNLOAD_STALL=1")
		// curl's word on the stalled read comes first, then the version.
		if code != 0 || !strings.Contains(out, "\nanvil-host ") {
			t.Fatalf("install: exit %d\n%s", code, out)
		}
		if n := archiveGets.Load(); n != 2 {
			t.Errorf("the archive was read %d times; want 2 (the stalled read, then one whole)", n)
		}
	})
	for _, tc := range []struct {
		name, version string
		corrupt       bool
		want          string
	}{
		{"checksum differs", "v9.9.9", true, "sha256 "},
		{"stall bound not a number", "v9.9.9", false, "ANVIL_DOWNLOAD_STALL"},
		{"no such release", "v9.9.8", false, "download "},
		{"not a tag", "latest", false, "version 'latest': want a release tag vX.Y.Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newActionEnv(t, t.TempDir())
			inst := filepath.Join(t.TempDir(), "inst")
			env := []string{"ANVIL_VERSION=" + tc.version, "ANVIL_RELEASE_URL=file://" + releaseDir(t, "9.9.9", name, archive, tc.corrupt), "ANVIL_INSTALL_DIR=" + inst}
			if tc.name == "stall bound not a number" {
				env = append(env, "ANVIL_DOWNLOAD_STALL=1m")
			}
			code, out := e.run(t, "install", env...)
			if code == 0 || !strings.Contains(out, "::error title=anvil: install::") || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant an ::error:: saying %q", code, out, tc.want)
			}
			if _, err := os.Stat(filepath.Join(inst, "anvil-host")); err == nil {
				t.Error("anvil-host was installed")
			}
			if readFileString(t, e.path) != "" {
				t.Error("GITHUB_PATH was written")
			}
		})
	}
}

// actionlint checks action.yml through the example workflow that uses it
// (examples/github-action/eval.yml), in a project of its own (actionlint
// reads a local action's metadata from the project's root); a workflow
// giving the action an input it does not have is refused, so the check
// reads action.yml at all. ANVIL_ACTION_E2E=1 (.ci/run) makes a missing
// actionlint (scripts/ci-deps-actionlint) a failure, not a skip.
func TestActionlint(t *testing.T) {
	testkit.Long(t, "runs actionlint")
	lint, err := exec.LookPath("actionlint")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		lint = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "actionlint")
		if _, err := os.Stat(lint); err != nil {
			if os.Getenv("ANVIL_ACTION_E2E") == "1" {
				t.Fatal("no actionlint on PATH or in GOPATH/bin: run scripts/ci-deps-actionlint")
			}
			t.Skip("no actionlint: scripts/ci-deps-actionlint installs it")
		}
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples", "github-action", "eval.yml"))
	if err != nil {
		t.Fatal(err)
	}
	action, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	lintWorkflow := func(workflow string) (int, string) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
		os.MkdirAll(filepath.Join(dir, ".github", "workflows"), 0o755)
		os.WriteFile(filepath.Join(dir, "action.yml"), action, 0o644)
		os.WriteFile(filepath.Join(dir, ".github", "workflows", "eval.yml"), []byte(workflow), 0o644)
		cmd := exec.Command(lint, "-no-color")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := lintWorkflow(string(example)); code != 0 {
		t.Fatalf("actionlint: exit %d\n%s", code, out)
	}
	bad := strings.Replace(string(example), "          version: v0.1.0\n", "          version: v0.1.0\n          no-such-input: x\n", 1)
	if code, out := lintWorkflow(bad); code != 1 || !strings.Contains(out, `input "no-such-input" is not defined in action "Anvil evaluation"`) {
		t.Errorf("actionlint on a workflow with an unknown input: exit %d\n%s", code, out)
	}
	missing := strings.Replace(string(example), "          version: v0.1.0\n", "", 1)
	if code, out := lintWorkflow(missing); code != 1 || !strings.Contains(out, `missing input "version"`) {
		t.Errorf("actionlint on a workflow without the required version: exit %d\n%s", code, out)
	}
}
