// Package anvileval_test runs the Python package's unit tests (python/tests)
// against the real anvil-host, built from this checkout, and a fake judge
// server on loopback (testkit.CapitalsJudge, whose replies python/tests
// asserts on): the Python API's results are the binary's, read back from
// its files. The tests need only a python3 (the package has no
// dependencies) and skip without one.
//
// The wheel itself — the binary inside it, pip, a fresh virtual
// environment, the pytest plugin — is tested by scripts/install-e2e.
package anvileval_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit"
)

func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("ANVIL_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-I", "-c", "import sys; assert sys.version_info >= (3, 9)").CombinedOutput(); err != nil {
		t.Skipf("no usable Python (%s, 3.9 or later): %v: %s", py, err, out)
	}
	return py
}

func TestPythonAPI(t *testing.T) {
	py := python(t)
	bin := filepath.Join(t.TempDir(), "anvil-host")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/anvil-host").CombinedOutput(); err != nil {
		t.Fatalf("build anvil-host: %v\n%s", err, out)
	}
	// python/tests/test_evaluate.py asserts on CapitalsJudge's replies.
	srv := testkit.CapitalsJudge(t)
	cmd := exec.Command(py, "-B", "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	cmd.Env = append(os.Environ(),
		"PYTHONPATH=src",
		"ANVIL_HOST="+bin,
		"ANVIL_TEST_JUDGE_URL="+srv.URL(),
		"ANVIL_TEST_KEY=test-key",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python unittest: %v", err)
	}
	if srv.Calls() == 0 {
		t.Fatal("the Python tests never reached the judge")
	}
}
