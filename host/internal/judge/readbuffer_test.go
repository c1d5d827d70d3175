package judge

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// countingConn counts the reads made on a connection.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// TestChunkedReplyIsReadInFewCalls: a large chunked reply (what most
// servers send for a completion with top_logprobs; here 51 KB of content)
// is read through the connection's 64 KiB buffer, not in 4 KiB reads: 8
// reads here with net/http's default, 2 with it (16 and 2 per call under
// the bench's fake judge, counted with strace).
func TestChunkedReplyIsReadInFewCalls(t *testing.T) {
	content := strings.Repeat("The answer covers the question fully. ", 1350) // ≈ 51 KB
	body := `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body)) //nolint:errcheck // no Content-Length: chunked
	}))
	defer srv.Close()
	var reads atomic.Int64
	client := defaultHTTPClient(2)
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &reads}, nil
	}
	h := newHarnessOn(t, nil, srv.URL+"/v1", nil, WithHTTPClient(client))
	resp := h.judge.Do(context.Background(), userRequest("grade this"))
	mustOK(t, resp)
	if resp.Content != content {
		t.Fatalf("content of %d bytes, want %d", len(resp.Content), len(content))
	}
	if n := reads.Load(); n > 4 {
		t.Errorf("%d reads on the connection for a %d-byte chunked reply; want at most 4", n, len(body))
	}
}
