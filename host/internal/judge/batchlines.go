package judge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// A batch's results are a stream of JSONL lines, one a request, each a
// reply as large as a live one: the output file of 50,000 requests with
// top logprobs is far over the single-reply bound (maxReplyBytes). So they
// are read line by line as they arrive, each line bounded by that bound
// and the lines by the batch's request count, and each handed on before
// the next is read: the file is never held whole.

// unboundedKey marks a request whose reply body the client middleware
// leaves unbounded: the caller bounds it (a batch's result lines).
type unboundedKey struct{}

// withUnboundedReply marks ctx's requests' replies as bounded by their
// reader rather than by maxReplyBytes.
func withUnboundedReply(ctx context.Context) context.Context {
	return context.WithValue(ctx, unboundedKey{}, true)
}

func unboundedReply(resp *http.Response) bool {
	if resp == nil || resp.Request == nil {
		return false
	}
	v, _ := resp.Request.Context().Value(unboundedKey{}).(bool)
	return v
}

// resultsRead is what reading a batch's results found besides its lines.
type resultsRead struct {
	// bad is the lines that were not result lines (their requests are
	// missing, and sent again).
	bad int
	// over names the lines refused as longer than the line bound
	// ("file-x line 7"): their requests are missing, and not worth
	// sending again (the same reply would be refused again).
	over []string
}

// maxBatchLines bounds the lines of a batch's results when its status
// does not say how many requests it holds: the largest batch any
// provider here accepts (Anthropic's).
const maxBatchLines = anthropicMaxBatchRequests

// lineReader reads result lines, counting them across the files of one
// batch.
type lineReader struct {
	batch string
	// limit bounds one line; maxLines the lines of all files.
	limit, maxLines int
	lines           int
	found           resultsRead
}

func newLineReader(batch string, requests, limit int) *lineReader {
	if requests <= 0 {
		requests = maxBatchLines
	}
	return &lineReader{batch: batch, limit: limit, maxLines: requests}
}

// read reads r (the file named what) to its end, calling fn with each
// non-blank line of at most limit bytes; fn must not keep the slice. A
// longer line is skipped to its end and named in found.over. More lines
// than maxLines stop the read with an error naming the batch and line.
func (lr *lineReader) read(r io.Reader, what string, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for n := 1; ; n++ {
		line = line[:0]
		over := false
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if !over {
				if len(line)+len(chunk) > lr.limit+1 { // +1: the newline
					over, line = true, line[:0]
				} else {
					line = append(line, chunk...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading batch %s's results, %s line %d: %w", lr.batch, what, n, err)
		}
		blank := !over && len(bytes.TrimSpace(line)) == 0
		if !blank {
			if lr.lines++; lr.lines > lr.maxLines {
				return &badResults{fmt.Sprintf("batch %s's results, %s line %d: more result lines than the batch's %d requests", lr.batch, what, n, lr.maxLines)}
			}
			if over {
				lr.found.over = append(lr.found.over, fmt.Sprintf("%s line %d", what, n))
			} else {
				fn(line)
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// badResults is results no reading again makes good: the provider's,
// not the connection's.
type badResults struct{ what string }

func (e *badResults) Error() string { return e.what }

// overFailure is the failure of the requests a batch ended without
// answering when some of its lines were refused as too long.
func (lr *lineReader) overFailure(status string) *failure {
	if len(lr.found.over) == 0 {
		return nil
	}
	return &failure{kind: failUnparseable, detail: fmt.Sprintf("batch %s (%s): its %s longer than one reply may be (%s), refused as a live reply that large is; this request's answer is missing",
		lr.batch, status, joinOver(lr.found.over), sizeText(lr.limit))}
}

// sizeText is a byte count for a message.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func joinOver(over []string) string {
	const show = 5
	s := ""
	for i, o := range over {
		if i == show {
			s += fmt.Sprintf(" and %d more", len(over)-show)
			break
		}
		if i > 0 {
			s += ", "
		}
		s += o
	}
	if len(over) == 1 {
		return s + " was"
	}
	return s + " were"
}
