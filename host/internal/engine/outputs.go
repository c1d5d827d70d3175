package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// derivedOutputs are the files derived from a run's results, written at its
// end. A new run removes them first, so an earlier run's summary or reports never
// sit beside this run's results — not even when this run stops early.
//
// calibration.json is written by `anvil-host calibrate` from this directory's
// results; a new run's results would make it stale.
var derivedOutputs = []string{"summary.json", "junit.xml", "report.html", "calibration.json"}

// clearStaleOutputs readies outDir for a run. Every run removes the derived
// outputs; a fresh run (not --resume) also removes cases/, whose files
// describe the results.jsonl it is about to truncate. Only Anvil's own
// names are touched, and cases/ only when the directory holds Anvil's
// results: an output directory pointed at a folder with a cases/ of someone
// else's is refused rather than emptied.
func clearStaleOutputs(outDir string, resume bool) error {
	for _, name := range derivedOutputs {
		if err := os.Remove(filepath.Join(outDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the previous run's %s: %w", name, err)
		}
	}
	if resume {
		return nil
	}
	casesDir := filepath.Join(outDir, "cases")
	if _, err := os.Stat(casesDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(outDir, "results.jsonl")); err != nil {
		return fmt.Errorf("output directory %s has a cases/ folder but no results.jsonl: it does not look like Anvil's; choose another --output-dir", outDir)
	}
	if err := os.RemoveAll(casesDir); err != nil {
		return fmt.Errorf("remove the previous run's cases/: %w", err)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
