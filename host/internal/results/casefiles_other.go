//go:build !unix

package results

import (
	"os"
	"path/filepath"
)

// caseFiles creates the files of cases/ (casefiles_unix.go says why it
// differs there).
type caseFiles struct{ dir string }

func openCaseFiles(dir string) (*caseFiles, error) { return &caseFiles{dir: dir}, nil }

func (c *caseFiles) write(name string, data []byte) error {
	return os.WriteFile(filepath.Join(c.dir, name), data, 0o644)
}

func (c *caseFiles) Close() error { return nil }
