// Package gotest shows Anvil inside `go test`: the quickstart's metrics
// run on its cases through host/anviltest, and a case that fails a gated
// metric fails the test with the metric's reason. With no judge key the
// quickstart's recorded judge session answers (see
// examples/quickstart/anvil.yaml), so this runs offline.
package gotest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/anviltest"
)

func TestQuickstartAnswers(t *testing.T) {
	if _, err := os.Stat("../../bin/wasm/textcheck.wasm"); err != nil {
		t.Skip("build the example plugin first: scripts/build-plugins")
	}
	res := anviltest.Assert(t, "../quickstart/anvil.yaml", readCases(t, "../quickstart/cases.jsonl")...)
	if res != nil && res.Summary.Cases != 12 {
		t.Errorf("%d cases evaluated, want 12", res.Summary.Cases)
	}
}

func readCases(t *testing.T, path string) []abi.TestCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []abi.TestCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c abi.TestCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	return out
}
