package judge

import (
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/agentanvil/anvil/host/internal/stall"
)

// maxReplyBytes bounds the body of one judge reply. A completion with 20
// top_logprobs on each of 4,096 tokens is about 5 MiB; a server (or a proxy
// in front of it) that sends more is broken or hostile, and reading on
// would let it take the host's memory.
const maxReplyBytes = 64 << 20

// limitReplyBody is client middleware that makes a reply body larger than
// limit fail to read, instead of being buffered whole, and that watches a
// batch exchange's bodies for a stall (stall.Exchange).
func limitReplyBody(limit int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := stall.Exchange(req, next)
		limitBody(resp, limit)
		return resp, err
	}
}

// limitBody makes resp's body fail to read past limit bytes (any SDK's
// middleware calls it), unless its request was marked withUnboundedReply:
// a batch's results, which their reader bounds line by line.
func limitBody(resp *http.Response, limit int64) {
	if resp != nil && resp.Body != nil && !unboundedReply(resp) {
		resp.Body = &limitedBody{rc: resp.Body, left: limit, limit: limit}
	}
}

// limitedBody reads at most limit bytes of rc and then fails, naming the
// limit, rather than ending early: a cut body must not decode as a
// shorter, valid one.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("judge reply larger than %d MiB: refused", b.limit>>20)
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
