package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// spillDirName is the directory, inside the output directory, that holds
// what the reports are built from while the cases come (junit.xml's
// testcases, report.html's chosen cases), so memory stays flat however
// many cases there are. One left by a crash is replaced by the next
// build's; the reports' Write removes it.
const spillDirName = ".anvil-report-spill"

// spill makes the files of spillDirName under parent, the directory on
// first use.
type spill struct {
	parent string
	dir    string // "" until the first file
	files  []*os.File
}

// create makes a new file in the spill directory.
func (s *spill) create(pattern string) (*os.File, error) {
	if s.dir == "" {
		dir := filepath.Join(s.parent, spillDirName)
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("clear %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		s.dir = dir
	}
	f, err := os.CreateTemp(s.dir, pattern)
	if err != nil {
		return nil, err
	}
	s.files = append(s.files, f)
	return f, nil
}

// remove closes and removes every file.
func (s *spill) remove() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	s.files = nil
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}
