package cli

import (
	"strings"
	"testing"
)

// TestClusterFlags: cluster flags are checked before anything connects:
// a usage error (exit 2) names the flag; a server that is not there is
// exit 3 naming it.
func TestClusterFlags(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := quickstart(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"worker"}, exitUsage, "--cluster nats://HOST:PORT is required"},
		{[]string{"worker", "--cluster", "http://127.0.0.1:4222"}, exitUsage, "want nats://HOST:PORT"},
		{[]string{"worker", "--cluster", "nats://127.0.0.1:4222", "--concurrency", "0"}, exitUsage, "--concurrency"},
		{[]string{"run", "-c", "anvil.yaml", "--ack-wait", "5s"}, exitUsage, "--ack-wait needs --cluster"},
		{[]string{"run", "-c", "anvil.yaml", "--creds", "x.creds"}, exitUsage, "--creds needs --cluster"},
		{[]string{"run", "-c", "anvil.yaml", "--max-deliver", "3"}, exitUsage, "--max-deliver needs --cluster"},
		{[]string{"run", "-c", "anvil.yaml", "--cluster", "nats://127.0.0.1:1", "--max-deliver", "0"}, exitUsage, "--max-deliver 0: must be positive"},
		{[]string{"run", "-c", "anvil.yaml", "--cluster", "127.0.0.1:4222"}, exitUsage, "want nats://HOST:PORT"},
		{[]string{"run", "-c", "anvil.yaml", "--cluster", "nats://127.0.0.1:1"}, exitUnverified, "connect to NATS at nats://127.0.0.1:1"},
		{[]string{"worker", "--cluster", "nats://127.0.0.1:1"}, exitUnverified, "connect to NATS at nats://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runBinary(t, dir, nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}
