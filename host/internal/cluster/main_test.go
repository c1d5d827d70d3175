package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// The test binary doubles as a worker or a coordinator process, so tests
// can kill one with SIGKILL: $ANVIL_CLUSTER_TEST_ROLE says which.
func TestMain(m *testing.M) {
	switch os.Getenv("ANVIL_CLUSTER_TEST_ROLE") {
	case "worker":
		os.Exit(workerProcess())
	case "coordinator":
		os.Exit(coordinatorProcess())
	}
	os.Exit(m.Run())
}

func workerProcess() int {
	cache, _ := os.MkdirTemp("", "anvil-cluster-test-wazero-")
	defer os.RemoveAll(cache)
	name, conc := "killable", 2
	if n := os.Getenv("ANVIL_CLUSTER_TEST_NAME"); n != "" {
		name, conc = n, 1 // one case at a time: a kill hands back only that case
	}
	err := RunWorker(context.Background(), WorkerOptions{
		URL: os.Getenv("ANVIL_CLUSTER_TEST_URL"), Name: name, Concurrency: conc,
		CompileCacheDir: cache,
		OnReady:         func() { fmt.Println("ready") },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func coordinatorProcess() int {
	dir, out := os.Getenv("ANVIL_CLUSTER_TEST_DIR"), os.Getenv("ANVIL_CLUSTER_TEST_OUT")
	ctx := context.Background()
	copts := CoordinatorOptions{URL: os.Getenv("ANVIL_CLUSTER_TEST_URL")}
	if d, err := time.ParseDuration(os.Getenv("ANVIL_CLUSTER_TEST_ACK_WAIT")); err == nil {
		copts.AckWait = d
	}
	if n, err := strconv.Atoi(os.Getenv("ANVIL_CLUSTER_TEST_MAX_DELIVER")); err == nil {
		copts.MaxDeliver = n
	}
	co, err := NewCoordinator(ctx, copts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := config.Load(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cache, _ := os.MkdirTemp("", "anvil-cluster-test-wazero-")
	defer os.RemoveAll(cache)
	opts := engine.Options{Cache: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CompileCacheDir: cache}
	co.EngineOptions(&opts)
	eng, err := engine.New(ctx, cfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	if _, err := co.Run(ctx, eng, engine.RunOptions{OutputDir: out}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// process is a re-executed test binary in a role.
type process struct {
	cmd *exec.Cmd
}

// startProcess starts the test binary in role and returns once it printed
// "ready" (it is connected and watching, or about to run).
func startProcess(t *testing.T, role string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"ANVIL_CLUSTER_TEST_ROLE=" + role, "ANVIL_TEST_KEY=test-key"}, env...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd}
	t.Cleanup(p.kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s process did not get ready: %q %v", role, line, err)
	}
	go io.Copy(io.Discard, stdout)
	return p
}

// kill sends SIGKILL and reaps the process.
func (p *process) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}
