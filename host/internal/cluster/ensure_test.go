package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEnsureAfterALostRace: a create that loses to another process's —
// "name already in use", or nats-server 2.9's "subjects overlap" — reads
// the stream again and uses it; any other error is returned at once, and
// a conflict that never resolves ends after ensureAttempts.
func TestEnsureAfterALostRace(t *testing.T) {
	overlap := &jetstream.APIError{Code: 400, ErrorCode: errSubjectsOverlap, Description: "subjects overlap with an existing stream"}
	other := errors.New("permissions violation")
	for _, tc := range []struct {
		name      string
		createErr error
		existsAt  int // the get that finds it (1-based); 0: never
		wantErr   string
		wantGets  int
	}{
		{"name in use", jetstream.ErrStreamNameAlreadyInUse, 2, "", 2},
		{"bucket exists", fmt.Errorf("%w: B", jetstream.ErrBucketExists), 2, "", 2},
		{"subjects overlap (nats-server 2.9)", overlap, 2, "", 2},
		{"another error", other, 0, "permissions violation", 1},
		{"lasting conflict", overlap, 0, "still conflicting after 8 attempts", ensureAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gets := 0
			v, err := ensure(context.Background(), "JetStream stream S", jetstream.ErrStreamNotFound,
				func(context.Context) (string, error) {
					gets++
					if gets == tc.existsAt {
						return "stream", nil
					}
					return "", jetstream.ErrStreamNotFound
				},
				func(context.Context) (string, error) { return "", tc.createErr })
			if tc.wantErr == "" && (err != nil || v != "stream") {
				t.Fatalf("ensure = %q, %v; want the stream another process created", v, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("ensure error = %v; want %q", err, tc.wantErr)
			}
			if gets != tc.wantGets {
				t.Errorf("%d reads, want %d", gets, tc.wantGets)
			}
			if err != nil && strings.Contains(err.Error(), "-js") {
				t.Errorf("error %q blames JetStream being off; it is on", err)
			}
		})
	}
}

// TestJetStreamOffIsNamed: only a server without JetStream gets the hint
// to start it with -js.
func TestJetStreamOffIsNamed(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	t.Cleanup(s.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = dial(ctx, s.ClientURL(), Auth{}, "t", quietLogger(t))
	if err == nil || !strings.Contains(err.Error(), "-js") {
		t.Fatalf("dial of a server without JetStream: %v; want the -js hint", err)
	}
}

// TestStreamOfAnotherVersionIsUpdated: a stream that exists with other
// settings (an older host's) is brought to this host's.
func TestStreamOfAnotherVersionIsUpdated(t *testing.T) {
	ns := startNATS(t, t.TempDir(), -1)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: resultsStream, Subjects: []string{"anvil.results.*"},
		Storage: jetstream.FileStorage, MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c, err := dial(ctx, ns.ClientURL(), Auth{}, "t", quietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	c.close()
	s, err := js.Stream(ctx, resultsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config; got.MaxAge != 7*24*time.Hour || got.Duplicates != 10*time.Minute {
		t.Errorf("after dial: max_age %s, duplicates %s; want this host's 168h and 10m", got.MaxAge, got.Duplicates)
	}
}

// TestWorkersStartTogether: processes that connect at the same moment to
// a fresh nats-server (the packaged binary, where the creation race and
// the crash of an update racing a creation were seen) all get going.
// Before, about one start in three of these rounds failed with "is the
// server started with -js?" or the server's crash.
func TestWorkersStartTogether(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("nats-server not on PATH (scripts/ci-deps-nats installs it)")
	}
	const rounds, together = 50, 4
	for round := range rounds {
		url := startNATSBinary(t, bin)
		var wg sync.WaitGroup
		errs := make([]error, together)
		for i := range together {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c, err := dial(ctx, url, Auth{}, fmt.Sprintf("w%d", i), quietLogger(t))
				if err == nil {
					c.close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d of %d processes starting together: %v", round, together, err)
		}
	}
}

// startNATSBinary starts nats-server with JetStream on a free loopback
// port and returns its URL once JetStream answers (a server that has just
// started may not yet serve its JetStream API).
func startNATSBinary(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", dir, "-l", filepath.Join(dir, "nats.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return url
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "nats.log"))
			t.Fatalf("nats-server's JetStream did not answer: %v\n%s", err, log)
		}
	}
}
