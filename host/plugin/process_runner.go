package plugin

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/hashicorp/go-plugin/runner"
)

// procRunner starts and stops one plugin process for go-plugin. It exists
// instead of go-plugin's own runner because that one hands the child the
// host's stdin and cannot kill what the child spawned; this one gives it
// no stdin, its own process group (killed whole), the binary's directory
// as working directory, and exactly the environment go-plugin prepared —
// which, with SkipHostEnv, is the handshake variables and nothing else.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser

	exited chan struct{} // closed once Wait returned

	mu    sync.Mutex
	state *os.ProcessState // set once Wait returned
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(path string, env []string) *procRunner {
	cmd := &exec.Cmd{
		Path: path,
		Args: []string{path},
		Env:  append([]string{}, env...),
		Dir:  filepath.Dir(path),
	}
	isolate(cmd)
	return &procRunner{cmd: cmd, exited: make(chan struct{})}
}

func (r *procRunner) Start(context.Context) error {
	var err error
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		return err
	}
	if r.stderr, err = r.cmd.StderrPipe(); err != nil {
		return err
	}
	return start(r.cmd, r.exited)
}

// Wait waits for the process to exit. go-plugin calls it once, whenever
// Start succeeded.
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.mu.Lock()
	r.state = r.cmd.ProcessState
	r.mu.Unlock()
	close(r.exited)
	return err
}

// Kill kills the process and everything in its process group.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return errors.New("not started")
	}
	return killTree(r.cmd.Process)
}

// exit describes how the process ended ("exit status 2", "signal:
// killed"), or "" while it has not been waited for.
func (r *procRunner) exit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		return ""
	}
	return r.state.String()
}

func (r *procRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *procRunner) Name() string                    { return r.cmd.Path }
func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// The process runs on this machine: addresses need no translation.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
