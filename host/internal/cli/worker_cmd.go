package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/cluster"
)

func newWorkerCmd() *cobra.Command {
	var cf clusterFlags
	var name, logLevel string
	var concurrency int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Evaluate the cases of cluster runs (run --cluster) published on a NATS server",
		Long: `Serve every run published on a NATS JetStream server by
` + "`anvil-host run --cluster`" + `: fetch the run's config and plugins (each
plugin checked against its digest), evaluate its cases and publish their
results, until interrupted. Start any number, on any machines.

A worker calls the judges itself, with the API keys of its own environment
(the key never travels through NATS). It refuses a run it cannot evaluate
exactly as the coordinator would: another ABI or build, plugin bytes that
do not match their digest, a judge it has no key for.

Exit codes: 0 stopped by SIGINT/SIGTERM after finishing or handing back its
cases; 2 usage error; 3 could not connect.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cf.url == "" {
				return usageErr(fmt.Errorf("--cluster nats://HOST:PORT is required"))
			}
			if err := cf.check(); err != nil {
				return err
			}
			if err := positiveFlags(cmd, "concurrency"); err != nil {
				return err
			}
			log, err := clusterLogger(logLevel, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			err = cluster.RunWorker(cmd.Context(), cluster.WorkerOptions{
				URL: cf.url, Auth: cf.auth(), Name: name, Concurrency: concurrency,
				Logger: log, CompileCacheDir: compileCacheDir(),
			})
			if err != nil {
				return &exitError{code: exitUnverified, err: err}
			}
			return nil
		},
	}
	cf.register(cmd, false)
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "worker name in logs and faults (default HOST-PID)")
	f.IntVar(&concurrency, "concurrency", 0, "cases this worker evaluates at once; default from the run's config, else twice the largest judge max_concurrency, at least 8")
	f.StringVar(&logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error")
	return cmd
}
