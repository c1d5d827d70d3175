package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

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
	// RetriedCases are the ids of those cases.
	RetriedCases map[string]bool `json:"-"`
}

// ReadDone reads dir/results.jsonl for --resume: the ids of the cases
// complete under config hash hash, each such case given to sink (nil:
// none) so what is built from the results covers the cases of earlier
// runs too. A torn trailing line (a crash mid-write) is cut off so the
// file stays valid JSONL, and reported. Lines under another hash, or
// whose identity check refuses (another judge or kind build), are an
// error: mixing results of two configs or two judges in one file would
// make the summary a lie. So is a line that does not decode, with what to
// do instead. A case whose result holds an error marked retryable is not
// complete (RetryOnResume): its line is removed, not given to sink, and
// the case evaluated again. unchecked counts the lines kept that have no
// identity (written before it was recorded).
func ReadDone(dir, hash string, check func(identity, where string) error, sink Sink) (done map[string]bool, rep *ResumeReport, unchecked int, err error) {
	path := filepath.Join(dir, "results.jsonl")
	rep = &ResumeReport{}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, rep, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("resume: %w", err)
	}
	defer f.Close()
	done = map[string]bool{}
	rep.RetriedCases = map[string]bool{}
	retry := map[int]bool{} // line numbers of retryable results
	br := bufio.NewReaderSize(f, 1<<16)
	var good, torn int64
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lineNo++
			r := new(CaseResult)
			if jerr := DecodeLine(line[:len(line)-1], r); jerr != nil {
				return nil, nil, 0, fmt.Errorf("resume: %s:%d: %w (a results.jsonl that cannot be resumed: run without --resume, or into another --output-dir)", path, lineNo, jerr)
			}
			if r.ConfigHash != hash {
				return nil, nil, 0, fmt.Errorf("resume: %s:%d: written under config hash %s, this config is %s; use another --output-dir or run without --resume",
					path, lineNo, r.ConfigHash, hash)
			}
			complete := true
			switch {
			case RetryOnResume(r):
				retry[lineNo] = true
				rep.RetriedCases[r.CaseID] = true
				delete(done, r.CaseID)
				complete = false
			case r.Identity == "":
				unchecked++
			default:
				if err := check(r.Identity, fmt.Sprintf("%s:%d", path, lineNo)); err != nil {
					return nil, nil, 0, fmt.Errorf("resume: %w; use another --output-dir or run without --resume", err)
				}
			}
			if complete {
				done[r.CaseID] = true
				if sink != nil {
					sink.Add(r)
				}
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
