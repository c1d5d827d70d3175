package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/cluster"
)

// clusterFlags are the NATS flags of `run --cluster` and `worker`.
// Credentials come from the standard NATS files (or $NATS_CREDS,
// $NATS_NKEY), never from anvil.yaml.
type clusterFlags struct {
	url     string
	creds   string
	nkey    string
	ackWait time.Duration
	// maxDeliver bounds a case's deliveries (a poison case becomes an
	// error result instead of a run that never ends).
	maxDeliver int
}

func (f *clusterFlags) register(cmd *cobra.Command, coordinator bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "cluster", "", "NATS JetStream server (nats://HOST:PORT): evaluate on the workers attached to it (docs/cluster.md)")
	fl.StringVar(&f.creds, "creds", "", "NATS credentials file (default $NATS_CREDS)")
	fl.StringVar(&f.nkey, "nkey", "", "NATS nkey seed file (default $NATS_NKEY)")
	if coordinator {
		fl.DurationVar(&f.ackWait, "ack-wait", cluster.DefaultAckWait, "with --cluster: a case whose worker reports no progress for this long is given to another worker")
		fl.IntVar(&f.maxDeliver, "max-deliver", cluster.DefaultMaxDeliver, "with --cluster: a case no worker finished after this many deliveries (each worker died or stalled on it) is written as an error")
	}
}

// check is a usage error for a malformed --cluster.
func (f *clusterFlags) check() error {
	if err := cluster.CheckURL(f.url); err != nil {
		return usageErr(err)
	}
	return nil
}

// orphan names a cluster flag given without --cluster.
func (f *clusterFlags) orphan(cmd *cobra.Command) string {
	if f.url != "" {
		return ""
	}
	for _, name := range []string{"creds", "nkey", "ack-wait", "max-deliver"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return name
		}
	}
	return ""
}

func (f *clusterFlags) auth() cluster.Auth {
	return cluster.Auth{CredsFile: f.creds, NKeyFile: f.nkey}
}

func clusterLogger(level string, stderr io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErr(fmt.Errorf("--log-level: %w", err))
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}

func (f *clusterFlags) coordinator(ctx context.Context, logLevel string, stderr io.Writer) (*cluster.Coordinator, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.ackWait <= 0 {
		return nil, usageErr(fmt.Errorf("--ack-wait %s: must be positive", f.ackWait))
	}
	if f.maxDeliver <= 0 {
		return nil, usageErr(fmt.Errorf("--max-deliver %d: must be positive", f.maxDeliver))
	}
	log, err := clusterLogger(logLevel, stderr)
	if err != nil {
		return nil, err
	}
	co, err := cluster.NewCoordinator(ctx, cluster.CoordinatorOptions{URL: f.url, Auth: f.auth(), Logger: log, AckWait: f.ackWait, MaxDeliver: f.maxDeliver})
	if err != nil {
		return nil, &exitError{code: exitUnverified, err: err}
	}
	return co, nil
}
