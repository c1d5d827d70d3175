package judge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// An SDK that decodes every reply itself (genai, the AWS SDK) gives the
// judge neither the raw body nor, on success, the HTTP response: the
// judge needs both, to decode a reply strictly (a repeated name or
// invalid UTF-8 is an unparseable reply, not the last value wins), to keep
// the server's own words when it is not one, and to read the status and
// the rate-limit headers. captureTransport keeps them, for the request
// whose context carries a *captured, while the SDK still sends the
// request and reads the same bytes.

// captured is one attempt's HTTP response and its body (at most
// maxReplyBytes, else readErr).
type captured struct {
	resp    *http.Response
	body    []byte
	readErr error
}

type captureKey struct{}

// withCapture returns ctx carrying c.
func withCapture(ctx context.Context, c *captured) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// captureTransport reads the body of a response to a request with a
// *captured in its context into it, and hands the SDK the same bytes.
type captureTransport struct {
	base http.RoundTripper
}

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return capture(req, t.base.RoundTrip)
}

// doer is an SDK's HTTP client (aws.HTTPClient).
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

// captureDoer is captureTransport around a client rather than a
// transport.
type captureDoer struct {
	next doer
}

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	return capture(req, d.next.Do)
}

// capture sends req with send and keeps the response as captureTransport
// says.
func capture(req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := send(req)
	c, _ := req.Context().Value(captureKey{}).(*captured)
	if err != nil || c == nil || resp == nil {
		return resp, err
	}
	limitBody(resp, maxReplyBytes)
	body, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.resp, c.body, c.readErr = resp, body, readErr
	if readErr != nil {
		// The SDK fails to read it too, and the judge reports the
		// capture's error.
		return nil, readErr
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// capturingClient is httpClient whose transport captures.
func capturingClient(httpClient *http.Client) *http.Client {
	base := httpClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *httpClient
	c.Transport = captureTransport{base: base}
	return &c
}

// outcome sorts a call made through an SDK under a capture: a request
// the SDK refused without sending (refused, given the SDK's error, says
// whether it did and how to count it: nil for a transport fault or the
// context, which go to the retry layer), an error for the retry layer (a
// body that could not be read, a status outside 2xx — with the response,
// whose headers carry Retry-After), or ok: a 2xx body to decode.
func (c *captured) outcome(err error, refused func(error) *failure) (f *failure, resp *http.Response, rerr error, ok bool) {
	switch {
	case c.resp == nil:
		if f := refused(err); f != nil {
			return f, nil, nil, false
		}
		return nil, nil, err, false
	case c.readErr != nil:
		return nil, c.response(), c.readErr, false
	case c.resp.StatusCode < 200 || c.resp.StatusCode > 299:
		if err == nil {
			err = fmt.Errorf("HTTP %d", c.resp.StatusCode)
		}
		return nil, c.response(), err, false
	}
	return nil, nil, nil, true
}

// response is the captured response with its body readable again, for
// Judge.classify (which reads an error body for the server's words).
func (c *captured) response() *http.Response {
	if c.resp == nil {
		return nil
	}
	r := *c.resp
	r.Body = io.NopCloser(bytes.NewReader(c.body))
	return &r
}
