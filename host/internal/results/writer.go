package results

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Writer appends finished cases to results.jsonl and writes
// cases/<id>.json. One goroutine owns the files: workers hand it a case and
// go on; it gathers the cases that finish within the commit interval of
// the first and fsyncs once for the batch (group commit), so a case is
// durable within moments of being final and no worker waits on the disk.
// A crash loses at most the cases not yet fsync'd — which --resume then
// evaluates again — and a torn last line is dropped by the next --resume.
// Once a batch is durable, its cases go to the Sink in file order.
type Writer struct {
	f     *os.File
	files *caseFiles // cases/
	in    chan *CaseResult
	done  chan struct{}
	err   error // set by the loop before done is closed
	o     WriterOptions
	enc   lineEncoder
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Resume appends to an existing results.jsonl; without it the file is
	// truncated.
	Resume bool
	// OnDurable is called, from the writer's goroutine, with the number
	// of cases each batch made durable.
	OnDurable func(n int)
	// Sink is given each case once it is durable, from the writer's
	// goroutine, in file order.
	Sink Sink
	// Interval is how long a batch waits for more cases before its fsync;
	// 0 is CommitInterval.
	Interval time.Duration
}

// maxBatch bounds one group commit.
const maxBatch = 256

// CommitInterval is how long a batch waits for more cases before its
// fsync. Without it a batch was whatever was queued at that instant —
// one to three cases at a few thousand cases a second — and fsync was
// 5% of a run's CPU; with it, at most ≈ 100 fsyncs a second, and a case
// is on disk at most this much later (bench/README.md, session 5).
const CommitInterval = 10 * time.Millisecond

// OpenWriter opens dir/results.jsonl and dir/cases/ for writing, creating
// them as needed, and starts the writer's goroutine.
func OpenWriter(dir string, o WriterOptions) (*Writer, error) {
	if o.Interval == 0 {
		o.Interval = CommitInterval
	}
	if err := os.MkdirAll(filepath.Join(dir, "cases"), 0o755); err != nil {
		return nil, fmt.Errorf("create output dir: %w", err)
	}
	path := filepath.Join(dir, "results.jsonl")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !o.Resume {
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
	w := &Writer{f: f, files: files, in: make(chan *CaseResult, maxBatch), done: make(chan struct{}), o: o}
	go w.loop()
	return w, nil
}

// Write queues a finished case, which the Writer then owns: the caller
// must not change it. It fails only when the writer has failed.
func (w *Writer) Write(r *CaseResult) error {
	select {
	case w.in <- r:
		return nil
	case <-w.done:
		return w.err
	}
}

// Close writes what is queued, then closes the files.
func (w *Writer) Close() error {
	close(w.in)
	<-w.done
	w.files.Close()
	if err := w.f.Close(); err != nil && w.err == nil {
		return fmt.Errorf("close results.jsonl: %w", err)
	}
	return w.err
}

func (w *Writer) loop() {
	defer close(w.done)
	batch := make([]*CaseResult, 0, maxBatch)
	commit := time.NewTimer(w.o.Interval)
	commit.Stop()
	closed := false
	for r := range w.in {
		batch = append(batch[:0], r)
		commit.Reset(w.o.Interval)
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
		if w.o.Sink != nil {
			for _, r := range batch {
				w.o.Sink.Add(r)
			}
		}
		if w.o.OnDurable != nil {
			w.o.OnDurable(len(batch))
		}
		clear(batch)
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
func (w *Writer) flush(batch []*CaseResult) error {
	w.enc.reset()
	for _, r := range batch {
		for i := range r.Metrics {
			// Empty details are no details: the encoder would refuse
			// empty bytes as a JSON value.
			if len(r.Metrics[i].Details) == 0 {
				r.Metrics[i].Details = nil
			}
		}
		if err := w.enc.appendLine(r); err != nil {
			return fmt.Errorf("encode case %q: %w", r.CaseID, err)
		}
		file, err := w.enc.caseFile(r)
		if err != nil {
			return fmt.Errorf("encode case %q: %w", r.CaseID, err)
		}
		if err := w.files.write(CaseFileName(r.CaseID), file); err != nil {
			return fmt.Errorf("write case %q: %w", r.CaseID, err)
		}
	}
	if _, err := w.f.Write(w.enc.lines.Bytes()); err != nil {
		return fmt.Errorf("append to results.jsonl: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync results.jsonl: %w", err)
	}
	return nil
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

// CaseFileName maps a case id to a file name that is safe and unique
// enough: unsafe characters are replaced and, when that changed anything,
// a short hash of the id is appended.
func CaseFileName(id string) string {
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

// plainFileName says CaseFileName keeps id as it is: a name of at most 120
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
