// Package anviltest evaluates test cases from a Go test, as DeepEval's
// assert_test does from pytest: a case that fails a gated metric fails the
// test, with the case, the metric, the score, the threshold and the
// metric's own reason in the failure message.
//
// Invariants: a run that verified nothing (no judge key, every case
// skipped) fails the test too — a green test means something was checked.
// A test binary whose config loads process plugins must call
// host.MaybeRunTrampoline first thing in its TestMain.
package anviltest

import (
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
)

// Assert evaluates cases with every metric of the config at configPath
// and fails t for each gated metric that did not pass on a case. It
// returns the result for further checks.
func Assert(t testing.TB, configPath string, cases ...abi.TestCase) *host.Result {
	t.Helper()
	return AssertWith(t, configPath, host.Options{}, cases...)
}

// AssertWith is Assert with options (a logger, a cache mode, an output
// directory to keep the reports).
func AssertWith(t testing.TB, configPath string, opts host.Options, cases ...abi.TestCase) *host.Result {
	t.Helper()
	cfg, err := host.LoadConfig(configPath)
	if err != nil {
		t.Fatalf("anvil: %v", err)
		return nil
	}
	res, err := host.Evaluate(t.Context(), cfg, cases, opts)
	if err != nil {
		t.Fatalf("anvil: %v", err)
		return res
	}
	failures := res.Failures()
	if res.Passed() {
		// Errors within the metrics' max_error_rate: worth seeing, not failing.
		for _, f := range failures {
			t.Logf("anvil: %s", f)
		}
		return res
	}
	for _, f := range failures {
		t.Errorf("anvil: %s", f)
	}
	for _, why := range res.Summary.Unverified {
		t.Errorf("anvil: could not verify: %s", why)
	}
	return res
}
