package pythonsdk_test

import (
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

func TestMain(m *testing.M) { sdktest.Main(m, &probeBuild) }

var probeBuild sdktest.Once

// probe packs testdata/probe (probe.py and this SDK) into a zipapp once,
// with the SDK's own packer, and returns its path.
func probe(t *testing.T) string {
	t.Helper()
	py := python(t)
	return filepath.Join(probeBuild.Dir(t, func(dir string) error {
		return sdktest.Command("", []string{"PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1"},
			py, "-B", "-m", "anvil_sdk.pack", "testdata/probe", "--plugin", "probe:plugin", "--python", py, "-o", filepath.Join(dir, "probe-py.pyz"))
	}), "probe-py.pyz")
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
