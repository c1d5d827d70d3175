package cluster

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLocalPathLinksNoNATS: a local run goes through the engine, the
// judge, the store and the reports; none of them links NATS. Only this
// package and the CLI that calls it do.
func TestLocalPathLinksNoNATS(t *testing.T) {
	local := []string{"../engine", "../judge", "../store", "../report", "../config", "../plugin"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, local...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/") || strings.HasSuffix(pkg, "/host/internal/cluster") {
			t.Errorf("the local path links %s", pkg)
		}
	}
}
