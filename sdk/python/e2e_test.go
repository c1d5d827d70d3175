package pythonsdk_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

func TestMain(m *testing.M) {
	host.MaybeRunTrampoline() // this binary is the sandbox trampoline of the plugin it starts
	code := m.Run()
	if probeBuild.dir != "" {
		os.RemoveAll(probeBuild.dir)
	}
	os.Exit(code)
}

var probeBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// probe packs testdata/probe (probe.py and this SDK) into a zipapp once,
// with the SDK's own packer, and returns its path.
func probe(t *testing.T) string {
	t.Helper()
	py := python(t)
	probeBuild.once.Do(func() {
		probeBuild.dir, probeBuild.err = os.MkdirTemp("", "probe-py-")
		if probeBuild.err != nil {
			return
		}
		probeBuild.path = filepath.Join(probeBuild.dir, "probe-py.pyz")
		cmd := exec.Command(py, "-B", "-m", "anvil_sdk.pack", "testdata/probe", "--plugin", "probe:plugin", "--python", py, "-o", probeBuild.path)
		cmd.Env = append(os.Environ(), "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeBuild.err = fmt.Errorf("anvil_sdk.pack: %v\n%s", err, out)
		}
	})
	if probeBuild.err != nil {
		t.Fatal(probeBuild.err)
	}
	return probeBuild.path
}

// TestParity: the probe, a sandboxed process plugin, passes the SDKs'
// parity suite (sdktest.RunParity) through the real host and the process
// wire.
func TestParity(t *testing.T) {
	sdktest.RunParity(t, sdktest.Probe{
		Plugin:   sdktest.Plugin{Name: "probe-py", Path: probe(t), Transport: "process", Limits: "{timeout: 20s}"},
		Cosine:   "cosine",
		Turns:    "turns",
		Presence: "presence",
	})
}
