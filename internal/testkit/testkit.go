// Package testkit is what the project's tests share across packages:
// Long, Golden (a golden file compared, or rewritten under -update) and
// CapitalsJudge (the SDK tests' scripted judge).
//
// Long tests: a test that takes minutes, builds a toolchain's output or
// starts an external program calls Long first. Under -short — scripts/test,
// README's test command — it is skipped; scripts/test-long runs every
// package without -short, so a long test runs there whatever its name,
// file or message, and no refactor can drop it from CI unnoticed.
package testkit

import "testing"

// Long skips t under -short, saying why it is long.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (scripts/test-long runs it): " + why)
	}
}
