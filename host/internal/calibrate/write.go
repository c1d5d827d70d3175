package calibrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// FileName is the report's file in the run directory, beside summary.json.
const FileName = "calibration.json"

// WriteFile writes rep as dir/calibration.json, replacing it whole (a
// reader never sees half a file).
func WriteFile(dir string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", FileName, err)
	}
	tmp, err := os.CreateTemp(dir, "."+FileName+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	return nil
}

// ReadFile reads dir/calibration.json.
func ReadFile(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileName), err)
	}
	return &rep, nil
}
