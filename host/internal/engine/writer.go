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
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/abijson"
)

// resultsWriter appends finished cases to results.jsonl and writes
// cases/<id>.json. One goroutine owns the files: workers hand it a case and
// go on; it gathers the cases that finish within commitInterval of the
// first and fsyncs once for the batch (group commit), so a case is durable
// within moments of being final and no worker waits on the disk. A crash
// loses at most the cases not yet fsync'd — which --resume then evaluates
// again — and a torn last line is dropped by the next --resume.
type resultsWriter struct {
	dir       string
	f         *os.File
	files     *caseFiles // cases/
	in        chan *CaseResult
	done      chan struct{}
	err       error         // set by the loop before done is closed
	onDurable func(n int)   // called with the number of cases made durable
	interval  time.Duration // commitInterval; tests set it
	line      bytes.Buffer
	whole     []byte // the compact encoding of a case with its Case
	detail    []byte // cases/<id>.json being written
}

// maxBatch bounds one group commit.
const maxBatch = 256

// commitInterval is how long a batch waits for more cases before its
// fsync. Without it a batch was whatever was queued at that instant —
// one to three cases at a few thousand cases a second — and fsync was
// 5% of a run's CPU; with it, at most ≈ 100 fsyncs a second, and a case
// is on disk at most this much later (bench/README.md, session 5).
const commitInterval = 10 * time.Millisecond

func openResults(dir string, resume bool, onDurable func(n int)) (*resultsWriter, error) {
	return openResultsEvery(dir, resume, onDurable, commitInterval)
}

// openResultsEvery is openResults with another commit interval.
func openResultsEvery(dir string, resume bool, onDurable func(n int), interval time.Duration) (*resultsWriter, error) {
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
	files, err := openCaseFiles(filepath.Join(dir, "cases"))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open case files: %w", err)
	}
	w := &resultsWriter{dir: dir, f: f, files: files, in: make(chan *CaseResult, maxBatch), done: make(chan struct{}), onDurable: onDurable, interval: interval}
	go w.loop()
	return w, nil
}

// write queues a finished case. It fails only when the writer has failed.
func (w *resultsWriter) write(r *CaseResult) error {
	select {
	case w.in <- r:
		return nil
	case <-w.done:
		return w.err
	}
}

// Close writes what is queued, then closes the file.
func (w *resultsWriter) Close() error {
	close(w.in)
	<-w.done
	w.files.Close()
	if err := w.f.Close(); err != nil && w.err == nil {
		return fmt.Errorf("close results.jsonl: %w", err)
	}
	return w.err
}

func (w *resultsWriter) loop() {
	defer close(w.done)
	batch := make([]*CaseResult, 0, maxBatch)
	commit := time.NewTimer(w.interval)
	commit.Stop()
	closed := false
	for r := range w.in {
		batch = append(batch[:0], r)
		commit.Reset(w.interval)
	gather:
		for len(batch) < maxBatch && !closed {
			select {
			case more, ok := <-w.in:
				if !ok {
					closed = true // Close: write what is queued now
					break gather
				}
				batch = append(batch, more)
			case <-commit.C:
				break gather
			}
		}
		commit.Stop()
		if err := w.flush(batch); err != nil {
			w.err = err
			return
		}
		if w.onDurable != nil {
			w.onDurable(len(batch))
		}
	}
}

// flush writes a batch: the case files first (a derived view, not synced
// one by one), then the results lines and one fsync — the line is what
// makes a case done.
//
// A case file is written in place, not to a temporary name renamed over
// it: creating the file is most of a case's cost on a busy disk, and the
// rename bought nothing here. A crash can leave a case file torn only
// while its line is not yet in results.jsonl; that case is not done, so
// --resume evaluates it again and rewrites the file (truncating it), and
// nothing reads a case file whose line is missing (docs/RATIONALE.md).
func (w *resultsWriter) flush(batch []*CaseResult) error {
	w.line.Reset()
	enc := json.NewEncoder(&w.line)
	for _, r := range batch {
		start := w.line.Len()
		line := *r
		line.Case = nil
		if b, ok := appendResultLine(w.line.AvailableBuffer(), &line); ok {
			w.line.Write(append(b, '\n'))
		} else if err := enc.Encode(&line); err != nil {
			return fmt.Errorf("encode case %q: %w", r.CaseID, err)
		}
		detail, err := w.caseDetail(w.line.Bytes()[start:w.line.Len()-1], r.Case)
		if err != nil {
			return fmt.Errorf("encode case %q: %w", r.CaseID, err)
		}
		if err := w.files.write(caseFileName(r.CaseID), detail); err != nil {
			return fmt.Errorf("write case %q: %w", r.CaseID, err)
		}
	}
	if _, err := w.f.Write(w.line.Bytes()); err != nil {
		return fmt.Errorf("append to results.jsonl: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync results.jsonl: %w", err)
	}
	return nil
}

// caseDetail is cases/<id>.json of a case whose results line (compact,
// without its newline) is line: the bytes json.MarshalIndent(r, "", "  ")
// makes, derived from the line rather than encoding the metrics twice.
// Case is CaseResult's last field and omitted when nil, so the compact
// encoding of the whole result is the line with `,"case":…` spliced in
// before its closing brace. The slice returned is valid until the next call.
func (w *resultsWriter) caseDetail(line []byte, c *abi.TestCase) ([]byte, error) {
	src := line
	if c != nil {
		w.whole = append(append(w.whole[:0], line[:len(line)-1]...), `,"case":`...)
		var ok bool
		if w.whole, ok = abijson.AppendTestCase(w.whole, c); !ok {
			caseJSON, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			w.whole = append(w.whole[:len(line)-1+len(`,"case":`)], caseJSON...)
		}
		w.whole = append(w.whole, '}')
		src = w.whole
	}
	// src is encoding/json's output byte for byte (written by hand or by
	// it), so appendIndent lays it out as json.Indent would, without
	// re-validating it.
	w.detail = appendIndent(w.detail[:0], src)
	return w.detail, nil
}

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
	if plainFileName(id) {
		return id + ".json"
	}
	safe := unsafeName.ReplaceAllString(id, "_")
	if safe != id || safe == "" || safe[0] == '.' {
		safe = fmt.Sprintf("%s-%08x", safe, fnv32(id))
	}
	if len(safe) > 120 {
		safe = fmt.Sprintf("%s-%08x", safe[:100], fnv32(id))
	}
	return safe + ".json"
}

// plainFileName says caseFileName keeps id as it is: a name of at most 120
// bytes of [A-Za-z0-9._-], not starting with a dot. Most ids are; the
// regular expression cost a case more than writing its line.
func plainFileName(id string) bool {
	if id == "" || len(id) > 120 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// ResumeReport is what --resume found in results.jsonl.
type ResumeReport struct {
	// Done is the number of cases already complete, skipped by this run.
	Done int `json:"done"`
	// TornLineBytes is the size of a torn last line (a crash mid-write)
	// that was cut off; that case is evaluated again. 0 when none.
	TornLineBytes int64 `json:"torn_line_bytes,omitempty"`
	// Retried is the number of cases whose results held an error marked
	// retryable (a judge outage, a lost worker, a transport timeout):
	// their lines were removed and the cases are evaluated again.
	Retried int `json:"retried,omitempty"`
}

// readDone reads results.jsonl for --resume: the ids of cases complete
// under hash. A torn trailing line (a crash mid-write) is cut off so the
// file stays valid JSONL, and reported. Lines under another hash, or
// whose identity check refuses (another judge or kind build), are an
// error: mixing results of two configs or two judges in one file would
// make the summary a lie. A case whose result holds an error marked
// retryable is not complete (RetryOnResume): its line is removed and the
// case evaluated again. unchecked counts the lines kept that have no
// identity (written before it was recorded).
func readDone(dir, hash string, check func(identity, where string) error) (map[string]bool, *ResumeReport, int, error) {
	path := filepath.Join(dir, "results.jsonl")
	rep := &ResumeReport{}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, rep, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("resume: %w", err)
	}
	defer f.Close()
	done := map[string]bool{}
	retry := map[int]bool{} // line numbers of retryable results
	unchecked := 0
	br := bufio.NewReaderSize(f, 1<<16)
	var good, torn int64
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lineNo++
			var r struct {
				CaseID     string `json:"case_id"`
				ConfigHash string `json:"config_hash"`
				Identity   string `json:"identity"`
				Metrics    []struct {
					Error *struct {
						Retryable bool `json:"retryable"`
					} `json:"error"`
				} `json:"metrics"`
			}
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				return nil, nil, 0, fmt.Errorf("resume: %s:%d: %w", path, lineNo, jerr)
			}
			if r.ConfigHash != hash {
				return nil, nil, 0, fmt.Errorf("resume: %s:%d: written under config hash %s, this config is %s; use another --output-dir or run without --resume",
					path, lineNo, r.ConfigHash, hash)
			}
			retryable := false
			for _, m := range r.Metrics {
				retryable = retryable || (m.Error != nil && m.Error.Retryable)
			}
			switch {
			case retryable:
				retry[lineNo] = true
				delete(done, r.CaseID)
			case r.Identity == "":
				unchecked++
				done[r.CaseID] = true
			default:
				if err := check(r.Identity, fmt.Sprintf("%s:%d", path, lineNo)); err != nil {
					return nil, nil, 0, fmt.Errorf("resume: %w; use another --output-dir or run without --resume", err)
				}
				done[r.CaseID] = true
			}
			good += int64(len(line))
		} else {
			torn = int64(len(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("resume: read %s: %w", path, err)
		}
	}
	if torn > 0 {
		if err := f.Truncate(good); err != nil {
			return nil, nil, 0, fmt.Errorf("resume: drop torn last line of %s: %w", path, err)
		}
	}
	if len(retry) > 0 {
		if err := dropLines(path, retry); err != nil {
			return nil, nil, 0, fmt.Errorf("resume: remove the retryable results from %s: %w", path, err)
		}
	}
	rep.Done, rep.TornLineBytes, rep.Retried = len(done), torn, len(retry)
	return done, rep, unchecked, nil
}

// dropLines rewrites the results file at path without the lines numbered
// in drop (from 1): into a temporary file, synced, renamed over it and the
// directory synced, so a crash leaves either file whole. A case whose line
// is gone is simply not done; nothing else is lost.
func dropLines(path string, drop map[int]bool) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the rename: nothing there
	bw := bufio.NewWriterSize(out, 1<<16)
	br := bufio.NewReaderSize(in, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 && !drop[lineNo] {
			if _, err := bw.Write(line); err != nil {
				out.Close()
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
