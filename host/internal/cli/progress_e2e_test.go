package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// TestProgressModes: a run whose stderr is not a terminal (a CI log)
// prints plain progress lines by default, the last at 100% with the run's
// counts; --progress none prints none; a mode it does not know, or
// --no-progress beside another mode, is a usage error.
func TestProgressModes(t *testing.T) {
	dir := quickstart(t)
	srv := judgetest.New(t)
	geval(srv)

	r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "plain")
	if r.code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The quickstart's ungated exact-match metric fails on paraphrases.
	last := regexp.MustCompile(`(?m)^progress: 12/12 cases \(100%\) · (\d+) passed · (\d+) failed · 0 errors · (\d+) judge calls · \$\d+\.\d{4}$`)
	m := last.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no final progress line in stderr:\n%s", r.stderr)
	}
	if p, f := atoi(t, m[1]), atoi(t, m[2]); p+f != 12 || f == 0 {
		t.Errorf("final line: %d passed + %d failed, want 12 with the exact metric's failures", p, f)
	}
	if strings.Contains(r.stdout, "progress:") {
		t.Errorf("progress lines on stdout:\n%s", r.stdout)
	}
	s := readSummary(t, dir+"/plain/summary.json")
	// The lines count the cases' calls; the once-per-run preparation (the
	// G-Eval steps) is the summary's alone.
	caseCalls := s.Judge.Calls
	for _, p := range s.Prepare {
		caseCalls -= p.Usage.Calls
	}
	if m[3] != strconv.Itoa(caseCalls) {
		t.Errorf("final line says %s judge calls; the summary's cases made %d", m[3], caseCalls)
	}

	r = runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "none", "--progress", "none")
	if r.code != exitOK || strings.Contains(r.stderr, "progress:") {
		t.Fatalf("--progress none: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	for _, args := range [][]string{
		{"--progress", "fancy"},
		{"--progress", "bar", "--no-progress"},
		{"--progress-interval", "0s"},
	} {
		r = runBinary(t, dir, judgeEnv(srv), append([]string{"run", "-c", "anvil.yaml", "-o", "bad"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--progress") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
