package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Auth is how a process authenticates to NATS: the standard NATS files,
// never anything from anvil.yaml. Empty fields fall back to $NATS_CREDS and
// $NATS_NKEY; user and password may also be in the URL.
type Auth struct {
	// CredsFile is a NATS credentials file (JWT and nkey seed).
	CredsFile string
	// NKeyFile is a file holding an nkey seed.
	NKeyFile string
}

// fromEnv fills what is empty from $NATS_CREDS and $NATS_NKEY.
func (a Auth) fromEnv(getenv func(string) string) Auth {
	if a.CredsFile == "" {
		a.CredsFile = getenv("NATS_CREDS")
	}
	if a.NKeyFile == "" {
		a.NKeyFile = getenv("NATS_NKEY")
	}
	return a
}

// conn is a connection to a NATS server with JetStream and the run's
// buckets and streams in place.
type conn struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	runs    jetstream.KeyValue
	cache   jetstream.KeyValue
	plugins jetstream.ObjectStore
	log     *slog.Logger
	health  *health
}

// health is what a process knows of its transport's faults: a disconnect,
// an error the server sent (a permissions violation, a slow consumer), a
// request that failed or timed out. The last one, and when it happened:
// the coordinator's no-progress notice names it, and a worker marks the
// errors of a case that ran meanwhile retryable.
type health struct {
	now  func() time.Time
	mu   sync.Mutex
	at   time.Time
	last string
}

func newHealth(now func() time.Time) *health {
	if now == nil {
		now = time.Now
	}
	return &health{now: now}
}

// fault records a transport fault: what was being done, and the error.
func (h *health) fault(what string, err error) {
	msg := what
	if err != nil {
		msg += ": " + err.Error()
	}
	h.mu.Lock()
	h.at, h.last = h.now(), truncate(msg, 512)
	h.mu.Unlock()
}

// since is the last fault recorded at or after t; "" when none was.
func (h *health) since(t time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == "" || h.at.Before(t) {
		return ""
	}
	return h.last
}

// lastFault is the last fault recorded and when; "" when none was.
func (h *health) lastFault() (string, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, h.at
}

// dial connects to serverURL (nats://host:port) and makes sure the
// streams and buckets exist. It reconnects forever: a NATS server that
// restarts does not end a run.
func dial(ctx context.Context, serverURL string, auth Auth, name string, log *slog.Logger) (*conn, error) {
	if err := CheckURL(serverURL); err != nil {
		return nil, err
	}
	auth = auth.fromEnv(os.Getenv)
	h := newHealth(nil)
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				h.fault("disconnected from NATS", err)
				log.Warn("disconnected from NATS; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("reconnected to NATS") }),
		// What the server refuses (a permissions violation: this
		// process's credentials lack a right it needs) or drops (a slow
		// consumer) arrives here, not as the failed call's error.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			what := "NATS"
			if sub != nil {
				what = "NATS subscription " + sub.Subject
			}
			h.fault(what, err)
			log.Warn("cluster: "+what+" error", "err", err)
		}),
	}
	if auth.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(auth.CredsFile))
	}
	if auth.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(auth.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nkey file %s: %w", auth.NKeyFile, err)
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(serverURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", redactURL(serverURL), err)
	}
	c := &conn{nc: nc, log: log, health: h}
	if err := c.setup(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *conn) setup(ctx context.Context) error {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("JetStream: %w", err)
	}
	c.js = js
	if err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: casesStream, Subjects: []string{"anvil.cases.*"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: 10 * time.Minute,
	}); err != nil {
		return err
	}
	if err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: resultsStream, Subjects: []string{"anvil.results.*"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour,
	}); err != nil {
		return err
	}
	if err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: exhaustedStream, Subjects: []string{exhaustedPrefix + "*"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		MaxAge: 7 * 24 * time.Hour,
	}); err != nil {
		return err
	}
	if c.runs, err = ensureKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: runsBucket, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	if c.cache, err = ensureKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: cacheBucket, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	if c.plugins, err = ensureObjectStore(ctx, js, jetstream.ObjectStoreConfig{Bucket: pluginsBucket, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	return nil
}

func (c *conn) close() {
	if c != nil && c.nc != nil {
		_ = c.nc.Drain()
		c.nc.Close()
	}
}

// redactURL drops a password from a URL before it is printed.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

var errStopped = errors.New("stopped")

// natsOutage is how long a publish keeps being retried while the NATS
// server is away (restarting) before the run gives up on it.
const natsOutage = 5 * time.Minute

// retry runs op until it succeeds, ctx is done or the server has been
// away for natsOutage. Every op retried here is idempotent (a publish with
// a Nats-Msg-Id, which JetStream de-duplicates). Each failure is a
// transport fault.
func (c *conn) retry(ctx context.Context, what string, op func() error) error {
	deadline := time.Now().Add(natsOutage)
	for {
		err := op()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.health.fault(what, err)
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s: %w (NATS unreachable for %s)", what, err, natsOutage)
		}
		c.log.Warn("cluster: NATS unavailable; retrying", "op", what, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// CheckURL checks a --cluster value: nats://HOST:PORT (or tls://).
func CheckURL(serverURL string) error {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return fmt.Errorf("--cluster %q: want nats://HOST:PORT", redactURL(serverURL))
	}
	return nil
}
