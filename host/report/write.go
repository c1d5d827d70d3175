package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/host/engine"
)

// Write writes junit.xml into dir from results.jsonl and s.
func Write(dir string, s *engine.Summary) error {
	cases, err := readResults(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "junit.xml"))
	if err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	if err := JUnit(f, s, cases); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readResults(path string) ([]engine.CaseResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	var out []engine.CaseResult
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 256<<20)
	for line := 1; sc.Scan(); line++ {
		var r engine.CaseResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		for i := range r.Metrics {
			r.Metrics[i].Details = nil // junit does not need them; keep memory small
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
