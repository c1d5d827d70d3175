package judge

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
)

// replyBuffers recycles the buffers reply bodies are read into: a scoring
// reply with 20 top_logprobs per token is tens of KB, and reading each
// into a fresh, repeatedly grown slice was a tenth of the judge's CPU per
// call. Nothing decoded from a body points into it (both decoders copy
// what they keep), so a buffer is reused as soon as the reply is decoded.
var replyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledReply bounds the buffers kept for reuse: one huge reply must not
// pin its memory for the rest of the run.
const maxPooledReply = 1 << 20

// readReply reads a 2xx reply's body (bounded by limitReplyBody) into a
// pooled buffer and closes it; done returns the buffer. A body that fails
// to read gives the error openai-go gives when it reads one itself.
func readReply(resp *http.Response) (body []byte, done func(), err error) {
	buf := replyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	done = func() {
		if buf.Cap() <= maxPooledReply {
			replyBuffers.Put(buf)
		}
	}
	if n := resp.ContentLength; n > 0 && n <= maxPooledReply {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		done()
		return nil, func() {}, fmt.Errorf("error reading response body: %w", err)
	}
	return buf.Bytes(), done, nil
}
