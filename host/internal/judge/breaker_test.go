package judge

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// countingClient is a real HTTP client that counts the connections it dials.
func countingClient(dials *atomic.Int64) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		// One connection per request, so dials count attempts.
		DisableKeepAlives: true,
	}}
}

// closedAddr is a loopback address nothing listens on: connections to it
// are refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// unavailableRecorder collects OnUnavailable calls.
type unavailableRecorder struct {
	mu   sync.Mutex
	errs []error
}

func (r *unavailableRecorder) record(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *unavailableRecorder) got() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func TestBreakerOpensOnRefusedConnections(t *testing.T) {
	var dials atomic.Int64
	var rec unavailableRecorder
	base := "http://" + closedAddr(t) + "/v1"
	h := newHarnessOn(t, nil, base, nil, WithHTTPClient(countingClient(&dials)), OnUnavailable(rec.record))

	const n = 50
	var resps []abi.JudgeResponse
	for i := range n {
		resps = append(resps, h.judge.Do(context.Background(), userRequest(fmt.Sprintf("q%d", i))))
	}
	// Three calls, each retried once, then nothing leaves the machine.
	if got := dials.Load(); got != 2*breakerThreshold {
		t.Errorf("%d dials for %d requests; want %d", got, n, 2*breakerThreshold)
	}
	for i, r := range resps {
		switch {
		case i < breakerThreshold:
			wantError(t, r, abi.CodeJudge, "cannot reach", "connection refused")
		default:
			wantError(t, r, abi.CodeJudgeUnavailable, "judge grader (gpt-test): unavailable", "3 calls in a row", "connection refused")
			if r.Usage.Calls != 0 || r.Usage.Attempts != 0 {
				t.Errorf("request %d: usage %+v; want no call made", i, r.Usage)
			}
		}
	}
	if tot := h.judge.Totals(); tot.Calls != breakerThreshold || tot.Attempts != 2*breakerThreshold || tot.Errors != n {
		t.Errorf("totals = %+v", tot)
	}

	var ae *abi.Error
	if err := h.judge.Unavailable(); !errors.As(err, &ae) || ae.Code != abi.CodeJudgeUnavailable || !strings.Contains(ae.Message, "connection refused") {
		t.Errorf("Unavailable() = %v; want judge_unavailable naming the cause", err)
	}
	if got := rec.got(); len(got) != 1 || got[0].Error() != h.judge.Unavailable().Error() {
		t.Errorf("OnUnavailable called with %v; want once, with the breaker's error", got)
	}
	// One WARN for the outage, not one per attempt or per request.
	logs := h.logs.String()
	if w := strings.Count(logs, "level=WARN"); w != 1 || !strings.Contains(logs, "judge unavailable") {
		t.Errorf("%d WARN lines; want 1 (the breaker opening):\n%s", w, logs)
	}
}

func TestBreakerBoundsCallsToARejectingServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []judgetest.Option
		reply judgetest.Reply
		frag  string
	}{
		{"401 wrong key", []judgetest.Option{judgetest.WithAPIKey("sk-the-right-one")}, judgetest.Reply{Content: "ok"},
			"authentication failed (HTTP 401)"},
		{"403", nil, judgetest.Reply{Status: 403, ErrorMessage: "project has no access"}, "permission denied (HTTP 403)"},
		{"404 model not found", nil, judgetest.Reply{Status: 404, ErrorMessage: "The model `gpt-test` does not exist or you do not have access to it."},
			"not found (HTTP 404)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const concurrency, n = 4, 200
			srv := judgetest.New(t, append(tc.opts, judgetest.WithDefault(tc.reply))...)
			var rec unavailableRecorder
			h := newHarnessOn(t, srv, srv.URL(), func(c *Config) { c.MaxConcurrency = concurrency }, OnUnavailable(rec.record))
			reqs := make([]abi.JudgeRequest, n)
			for i := range reqs {
				reqs[i] = userRequest(fmt.Sprintf("q%d", i))
			}
			unavailable := 0
			for _, r := range h.judge.Batch(context.Background(), reqs) {
				if r.Error == nil {
					t.Fatal("a request succeeded")
				}
				switch r.Error.Code {
				case abi.CodeJudgeUnavailable:
					unavailable++
				case abi.CodeJudge:
					wantError(t, r, abi.CodeJudge, tc.frag)
				default:
					t.Errorf("unexpected error %v", r.Error)
				}
			}
			// At most the tripping streak plus what was already on the wire.
			if max := breakerThreshold + concurrency - 1; srv.Calls() > max || srv.Calls() < breakerThreshold {
				t.Errorf("the server saw %d calls for %d requests; want %d to %d", srv.Calls(), n, breakerThreshold, max)
			}
			if unavailable != n-srv.Calls() || len(rec.got()) != 1 {
				t.Errorf("%d unavailable, %d callbacks; want %d and 1", unavailable, len(rec.got()), n-srv.Calls())
			}
		})
	}
}

func TestBreakerNeedsFailuresInARow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	unauthorized := judgetest.Reply{Status: 401, ErrorMessage: "bad key"}
	h.srv.SetDefault(judgetest.Sequence(unauthorized, unauthorized, judgetest.Reply{Content: "ok"},
		unauthorized, unauthorized, judgetest.Reply{Status: 503}, unauthorized, unauthorized, unauthorized))
	for i := range 8 {
		h.judge.Do(context.Background(), userRequest(fmt.Sprint(i)))
		if err := h.judge.Unavailable(); err != nil {
			t.Fatalf("request %d opened the breaker: %v", i+1, err)
		}
	}
	h.judge.Do(context.Background(), userRequest("the third in a row"))
	if h.judge.Unavailable() == nil {
		t.Fatal("three 401s in a row did not open the breaker")
	}
}

func TestBreakerIgnoresFaultsRetryingCanFix(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	h.srv.SetDefault(judgetest.PlainText(503, "overloaded"))
	for i := range 10 {
		wantError(t, h.judge.Do(context.Background(), userRequest(fmt.Sprint(i))), abi.CodeJudge, "server error (HTTP 503)", "overloaded")
	}
	if h.srv.Calls() != 10 || h.judge.Unavailable() != nil {
		t.Errorf("server calls %d, unavailable %v; want 10 calls and a closed breaker", h.srv.Calls(), h.judge.Unavailable())
	}
}

func TestBreakerOpensOnTLSFailures(t *testing.T) {
	plain := judgetest.New(t)
	tlsSrv := httptest.NewUnstartedServer(judgetest.NewServer().Handler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failures are the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	for _, tc := range []struct{ name, base string }{
		{"untrusted certificate", tlsSrv.URL + "/v1"},
		{"https to a plain HTTP server", strings.Replace(plain.URL(), "http://", "https://", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessOn(t, nil, tc.base, nil)
			for i := range breakerThreshold {
				resp := h.judge.Do(context.Background(), userRequest(fmt.Sprint(i)))
				wantError(t, resp, abi.CodeJudge, "TLS failed")
				if resp.Usage.Attempts != 1 {
					t.Errorf("attempts = %d; want 1 (a TLS failure is not retried)", resp.Usage.Attempts)
				}
			}
			wantError(t, h.judge.Do(context.Background(), userRequest("next")), abi.CodeJudgeUnavailable, "TLS failed")
		})
	}
}

func TestCacheHitsAreServedWhileUnavailable(t *testing.T) {
	h := newHarness(t, nil, WithCache(openStore(t), CacheReadWrite))
	mustOK(t, h.judge.Do(context.Background(), userRequest("recorded")))
	h.srv.SetDefault(judgetest.Reply{Status: 401})
	for i := range breakerThreshold {
		h.judge.Do(context.Background(), userRequest(fmt.Sprint(i)))
	}
	if h.judge.Unavailable() == nil {
		t.Fatal("breaker closed")
	}
	resp := h.judge.Do(context.Background(), userRequest("recorded"))
	mustOK(t, resp)
	if !resp.Usage.CacheHit {
		t.Errorf("usage = %+v; want a cache hit", resp.Usage)
	}
}

func TestTransportKinds(t *testing.T) {
	op := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	tests := []struct {
		name string
		err  error
		want failureKind
	}{
		{"refused", op(os.NewSyscallError("connect", syscall.ECONNREFUSED)), failRefused},
		{"host unreachable", op(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), failRefused},
		{"no such host", op(&net.DNSError{Err: "no such host", Name: "judge.invalid", IsNotFound: true}), failDNS},
		{"dns timeout", op(&net.DNSError{Err: "i/o timeout", Name: "judge.example", IsTimeout: true, IsTemporary: true}), failUnreachable},
		{"unknown authority", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), failTLS},
		{"reset", op(os.NewSyscallError("read", syscall.ECONNRESET)), failUnreachable},
		{"eof", io.ErrUnexpectedEOF, failUnreachable},
	}
	for _, tc := range tests {
		if got := transportKind(tc.err); got != tc.want {
			t.Errorf("%s: kind %d; want %d", tc.name, got, tc.want)
		}
	}
}
