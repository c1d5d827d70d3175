package judge

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// A batch's results larger than one reply may be (the 64 MiB bound of a
// live reply) are read line by line: every line arrives. Each flavour's
// fake encodes its output as it serves it, from one shared content.
func TestBatchResultsOverTheReplyBound(t *testing.T) {
	testkit.Long(t, "each flavour serves and decodes over 64 MiB of batch results")
	const n = 44
	content := strings.Repeat("x", 1600<<10) // 44 × 1.6 MiB: about 69 MiB of lines
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.SetDefault(judgetest.Reply{Content: content})
			// The judge's default timeout, not the tests' 5 s: the fake
			// answers all 69 MiB inside the status read that ends the
			// batch, which on a loaded machine takes longer than 5 s with
			// nothing sent (a stall, as the judge rightly says).
			h := batchJudgeWithTimeout(t, fl, srv, n, DefaultTimeout)
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, p := range prompts(n) {
				wg.Go(func() {
					r := h.judge.Do(WithBatching(context.Background()), userRequest(p))
					switch {
					case r.Error != nil:
						errs[i] = r.Error
					case len(r.Content) != len(content):
						errs[i] = fmt.Errorf("content of %d bytes; want %d", len(r.Content), len(content))
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			}
			if c := srv.BatchCreates(); c != 1 {
				t.Errorf("%d batches created; want 1", c)
			}
		})
	}
}

// A result line longer than the line bound is refused: its request fails
// with an error naming the batch and the line, and is not sent again (the
// same reply would be refused again); the batch's other lines answer
// theirs.
func TestBatchResultLineOverTheBound(t *testing.T) {
	const bound = 256 << 10
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.On(judgetest.ContainsMessage("grade answer 1"), judgetest.Reply{Content: strings.Repeat("y", 2*bound)})
			h := batchJudgeOn(t, fl, srv, 3, nil, false)
			h.judge.batcher.maxLine = bound
			resps := doAll(context.Background(), h.judge, prompts(3))
			for i, r := range resps {
				if i != 1 {
					mustOK(t, r)
					continue
				}
				id := srv.Batches()[0].ID
				// The line's number is its request's place in the batch.
				if r.Error == nil || !strings.Contains(r.Error.Message, "batch "+id) || !lineNamed.MatchString(r.Error.Message) ||
					!strings.Contains(r.Error.Message, "refused") || !strings.Contains(r.Error.Message, "(262144 bytes)") {
					t.Errorf("the long line's request: %v; want an error naming batch %s, the line and the bound, refused", r.Error, id)
				}
			}
			if c := srv.BatchCreates(); c != 1 {
				t.Errorf("%d batches created; want 1 (a refused line is not sent again)", c)
			}
		})
	}
}

var lineNamed = regexp.MustCompile(`(file file-\S+|results) line [123] was longer`)

// The line reader: blank lines skipped, a last line without a newline
// read, a line over the bound skipped to its end and named, more lines
// than the batch's requests refused.
func TestLineReader(t *testing.T) {
	long := strings.Repeat("z", 100)
	for _, tc := range []struct {
		name, in string
		requests int
		lines    []string
		over     []string
		err      string
	}{
		{"lines", "a\nb\n", 2, []string{"a\n", "b\n"}, nil, ""},
		{"blank and unterminated", "a\n\n  \nb", 2, []string{"a\n", "b"}, nil, ""},
		{"exactly the bound", strings.Repeat("z", 16) + "\nc\n", 2, []string{strings.Repeat("z", 16) + "\n", "c\n"}, nil, ""},
		{"over the bound", "a\n" + long + "\nc\n", 3, []string{"a\n", "c\n"}, []string{"f line 2"}, ""},
		{"over the bound, unterminated", "a\n" + long, 3, []string{"a\n"}, []string{"f line 2"}, ""},
		{"too many lines", "a\nb\nc\n", 2, []string{"a\n", "b\n"}, nil, "batch B's results, f line 3: more result lines than the batch's 2 requests"},
		{"requests unknown", "a\nb\nc\n", 0, []string{"a\n", "b\n", "c\n"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLineReader("B", tc.requests, 16)
			var got []string
			err := lr.read(strings.NewReader(tc.in), "f", func(l []byte) { got = append(got, string(l)) })
			if fmt.Sprint(got) != fmt.Sprint(tc.lines) || fmt.Sprint(lr.found.over) != fmt.Sprint(tc.over) {
				t.Errorf("lines %q over %q; want %q, %q", got, lr.found.over, tc.lines, tc.over)
			}
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v; want %q", err, tc.err)
			}
		})
	}
}

// Any stream from the network is read without a panic; no line handed on
// is longer than the bound (with its newline), or blank, or holds a
// newline before its end; the lines handed on and refused never exceed
// the batch's requests.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\n"), 2)
	f.Add([]byte("\n\n"+strings.Repeat("q", 40)+"\nx"), 1)
	f.Add([]byte("{\"custom_id\":\"a\"}\r\n"), 0)
	f.Fuzz(func(t *testing.T, in []byte, requests int) {
		const bound = 16
		lr := newLineReader("B", requests%8, bound)
		n := 0
		_ = lr.read(strings.NewReader(string(in)), "f", func(l []byte) {
			n++
			if len(l) > bound+1 || strings.TrimSpace(string(l)) == "" || strings.Contains(strings.TrimSuffix(string(l), "\n"), "\n") {
				t.Fatalf("line %q handed on", l)
			}
		})
		if max := lr.maxLines; n+len(lr.found.over) > max {
			t.Fatalf("%d lines and %d refused over %d requests", n, len(lr.found.over), max)
		}
	})
}

// A read of an ended batch's results that fails is made again (not the
// batch: its lines are done and billed); when every read fails, the calls
// fail retryable (so --resume evaluates their cases again, reading the
// recorded batch) and no new batch is created.
func TestBatchResultsReadAgain(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.FailResultsReads(2) // max_retries 2: the third read succeeds
			h := batchJudgeOn(t, fl, srv, 2, nil, false)
			for _, r := range doAll(context.Background(), h.judge, prompts(2)) {
				mustOK(t, r)
			}
			srv.FailResultsReads(3)
			for _, r := range doAll(context.Background(), h.judge, []string{"x 1", "x 2"}) {
				if r.Error == nil || !r.Error.Retryable || !strings.Contains(r.Error.Message, "run --resume reads the batch's results again") {
					t.Errorf("error %+v; want a retryable one naming --resume", r.Error)
				}
			}
			if n := srv.BatchCreates(); n != 2 {
				t.Errorf("%d batches created; want 2 (none sent again)", n)
			}
		})
	}
}

// A batch whose status cannot be read (the server failing past
// max_retries) fails its calls retryable, naming --resume, and is not sent
// again in a new batch: it still runs at the provider and bills its lines,
// and a resumed run polls it. Before, its requests went into a second
// batch, paying twice.
func TestBatchStatusUnreadableIsNotSentAgain(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.FailStatusReads(100)
			h := batchJudgeOn(t, fl, srv, 2, nil, false)
			for _, r := range doAll(context.Background(), h.judge, prompts(2)) {
				if r.Error == nil || !r.Error.Retryable || !strings.Contains(r.Error.Message, "run --resume polls the batch again") {
					t.Errorf("error %+v; want a retryable one naming --resume", r.Error)
				}
			}
			if n := srv.BatchCreates(); n != 1 {
				t.Errorf("%d batches created; want 1 (none sent again)", n)
			}
		})
	}
}
