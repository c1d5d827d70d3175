package stall_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/stall"
)

// server answers GET / with chunks of its body, each flushed, gap apart;
// after chunks (if ≥ 0 and fewer than the body's) it holds the reply
// until the client goes. before holds even the headers.
func server(t *testing.T, chunks []string, gap time.Duration, after int, before bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusOK)
		for i, c := range chunks {
			if i == after {
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			if i > 0 {
				time.Sleep(gap) // the link's pace: the subject of the test
			}
			io.WriteString(w, c) //nolint:errcheck
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestTransport(t *testing.T) {
	const idle = 2 * time.Second // generous: a loaded machine's pauses are not stalls
	chunks := []string{"a", "b", "c", "d", "e", "f"}
	for _, tc := range []struct {
		name   string
		gap    time.Duration
		after  int
		before bool
		// body is what is read; stalled, whether the exchange ends in a
		// stall (at the request or in the body).
		body    string
		stalled bool
	}{
		// 5 gaps of 500 ms: longer than idle in all, never idle.
		{"slow but moving", 500 * time.Millisecond, -1, false, "abcdef", false},
		{"stalls mid-body", 0, 2, false, "ab", true},
		{"stalls before the headers", 0, -1, true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := server(t, chunks, tc.gap, tc.after, tc.before)
			c := &http.Client{Transport: &stall.Transport{Idle: idle}}
			resp, err := c.Get(url)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			var se *stall.Error
			if string(got) != tc.body || errors.As(err, &se) != tc.stalled || (err == nil) == tc.stalled {
				t.Fatalf("read %q, err %v; want %q, stalled %v", got, err, tc.body, tc.stalled)
			}
			if tc.stalled && (se.Idle != idle || !strings.Contains(err.Error(), "nothing sent or received for 2s")) {
				t.Errorf("err %v; want it to name the idle bound", err)
			}
		})
	}
}

// An upload the server stops reading stalls too: the request body's
// reads stop once the connection's buffers are full.
func TestTransportUploadStalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		// Accept and never read: the peer's writes fill the buffers.
		conn, err := ln.Accept()
		if err == nil {
			t.Cleanup(func() { conn.Close() })
		}
	}()
	c := &http.Client{Transport: &stall.Transport{Idle: 2 * time.Second}}
	_, err = c.Post("http://"+ln.Addr().String(), "application/octet-stream", bytes.NewReader(make([]byte, 256<<20)))
	var se *stall.Error
	if !errors.As(err, &se) {
		t.Fatalf("err %v; want a stall", err)
	}
}

// An upload the server reads slowly, longer than the idle bound in all,
// is not a stall: each part it takes re-arms the guard.
func TestTransportSlowUpload(t *testing.T) {
	const size = 64 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		n := 0
		for {
			k, err := io.ReadFull(r.Body, buf)
			n += k
			if err != nil {
				break
			}
			time.Sleep(40 * time.Millisecond) // the server's pace: 64 parts, 2.6 s in all
		}
		fmt.Fprint(w, n)
	}))
	t.Cleanup(srv.Close)
	c := &http.Client{Transport: &stall.Transport{Idle: 2 * time.Second}}
	resp, err := c.Post(srv.URL, "application/octet-stream", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != fmt.Sprint(size) {
		t.Fatalf("server read %s bytes (err %v); want %d", got, err, size)
	}
}
