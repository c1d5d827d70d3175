package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// resultsWriter appends finished cases to results.jsonl, one fsync'd line
// each, and writes cases/<id>.json. A crash loses at most the case being
// written; a torn last line is dropped by the next --resume.
type resultsWriter struct {
	mu  sync.Mutex
	dir string
	f   *os.File
	enc bytes.Buffer
}

func openResults(dir string, resume bool) (*resultsWriter, error) {
	if err := os.MkdirAll(filepath.Join(dir, "cases"), 0o755); err != nil {
		return nil, fmt.Errorf("create output dir: %w", err)
	}
	path := filepath.Join(dir, "results.jsonl")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !resume {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	return &resultsWriter{dir: dir, f: f}, nil
}

func (w *resultsWriter) write(r *CaseResult) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	detail, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode case %q: %w", r.CaseID, err)
	}
	if err := writeFileSync(filepath.Join(w.dir, "cases", caseFileName(r.CaseID)), detail); err != nil {
		return fmt.Errorf("write case %q: %w", r.CaseID, err)
	}
	line := *r
	line.Case = nil
	w.enc.Reset()
	if err := json.NewEncoder(&w.enc).Encode(&line); err != nil {
		return fmt.Errorf("encode case %q: %w", r.CaseID, err)
	}
	if _, err := w.f.Write(w.enc.Bytes()); err != nil {
		return fmt.Errorf("append case %q to results.jsonl: %w", r.CaseID, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync results.jsonl: %w", err)
	}
	return nil
}

func (w *resultsWriter) Close() error { return w.f.Close() }

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// caseFileName maps a case id to a file name that is safe and unique
// enough: unsafe characters are replaced and, when that changed anything,
// a short hash of the id is appended.
func caseFileName(id string) string {
	safe := unsafeName.ReplaceAllString(id, "_")
	if safe != id || safe == "" || safe[0] == '.' {
		safe = fmt.Sprintf("%s-%08x", safe, fnv32(id))
	}
	if len(safe) > 120 {
		safe = fmt.Sprintf("%s-%08x", safe[:100], fnv32(id))
	}
	return safe + ".json"
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// readDone reads results.jsonl for --resume: the ids of cases complete
// under hash. A torn trailing line (a crash mid-write) is cut off so the
// file stays valid JSONL. Lines under another hash are an error: mixing
// results of two configs in one file would make the summary a lie.
func readDone(dir, hash string) (map[string]bool, error) {
	path := filepath.Join(dir, "results.jsonl")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	defer f.Close()
	done := map[string]bool{}
	br := bufio.NewReaderSize(f, 1<<16)
	var good int64
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lineNo++
			var r struct {
				CaseID     string `json:"case_id"`
				ConfigHash string `json:"config_hash"`
			}
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				return nil, fmt.Errorf("resume: %s:%d: %w", path, lineNo, jerr)
			}
			if r.ConfigHash != hash {
				return nil, fmt.Errorf("resume: %s:%d: written under config hash %s, this config is %s; use another --output-dir or run without --resume",
					path, lineNo, r.ConfigHash, hash)
			}
			done[r.CaseID] = true
			good += int64(len(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("resume: read %s: %w", path, err)
		}
	}
	if err := f.Truncate(good); err != nil {
		return nil, fmt.Errorf("resume: drop torn last line of %s: %w", path, err)
	}
	return done, nil
}
