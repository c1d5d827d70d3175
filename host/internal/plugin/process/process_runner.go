package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/hashicorp/go-plugin/runner"
)

// procRunner starts and stops one plugin process for go-plugin. It exists
// instead of go-plugin's own runner because that one hands the child the
// host's stdin, cannot kill what the child spawned and runs whatever the
// path names; this one gives it no stdin, the binary whose digest was
// checked, the OS isolation the kernel grants (sandbox_linux.go), the
// binary's directory as working directory, and exactly the environment
// go-plugin prepared — which, with SkipHostEnv, is the handshake
// variables and nothing else.
type procRunner struct {
	l      launch
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	report *transport.IsolationReport
	pidNS  bool // the plugin is PID 1 of its own PID namespace

	exited chan struct{} // closed once Wait returned

	mu    sync.Mutex
	state *os.ProcessState // set once Wait returned
	pins  []io.Closer      // what PluginToHost pinned
}

var _ runner.Runner = (*procRunner)(nil)

// launch is what starting one plugin process takes.
type launch struct {
	path      string   // the binary's absolute path: its argv[0]; its directory is the working directory
	bin       *os.File // the binary, open, its digest checked: what runs (Linux)
	env       []string // go-plugin's handshake variables, nothing else
	socketDir string   // go-plugin's socket directory: the one place the plugin may write
	mode      transport.IsolationMode
	knobs     sandboxKnobs
}

// started is a started plugin process and the isolation it got.
type started struct {
	cmd    *exec.Cmd
	report *transport.IsolationReport
	pidNS  bool
}

// isolationError is a start refused because isolation is required and
// the kernel did not grant all of it.
type isolationError struct{ report *transport.IsolationReport }

func (e *isolationError) Error() string {
	msg := fmt.Sprintf("%v (isolation: required): %s is missing", transport.ErrIsolationMissing, e.report.Missing())
	if len(e.report.Notes) > 0 {
		msg += fmt.Sprintf(" (%s)", strings.Join(e.report.Notes, "; "))
	}
	return msg + "; the plugin was not started"
}

func (e *isolationError) Unwrap() error { return transport.ErrIsolationMissing }

func newProcRunner(l launch) *procRunner {
	return &procRunner{l: l, exited: make(chan struct{})}
}

func (r *procRunner) Start(ctx context.Context) error {
	defer r.l.bin.Close() // the child holds its own copy
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	s, err := startSandboxed(ctx, &r.l, outW, errW, r.exited)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	r.cmd, r.report, r.pidNS = s.cmd, s.report, s.pidNS
	r.stdout, r.stderr = outR, errR
	if r.report.Mode == transport.IsolationRequired && r.report.Missing() != 0 {
		// The trampoline refused to exec the plugin; make sure, and reap
		// it (go-plugin waits only for runners that started).
		_ = r.Kill(ctx)
		_ = r.Wait(ctx)
		outR.Close()
		errR.Close()
		return &isolationError{report: r.report}
	}
	return nil
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

// Kill kills the process and everything it spawned.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd == nil || r.cmd.Process == nil {
		return errors.New("not started")
	}
	return killTree(r.cmd.Process, r.pidNS)
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
func (r *procRunner) Name() string                    { return r.l.path }
func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) ID() string {
	if r.cmd == nil || r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// PluginToHost vets the address the plugin advertises in its handshake,
// which the host is about to dial: the plugin chooses it, and a host that
// dialled a TCP address, or a symlink to another socket, for a plugin
// without network would carry the cases out for it. Only a socket file
// directly in the plugin's socket directory passes, pinned so that what
// was checked is what the host connects to.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	pinned, closer, err := vetAddress(network, addr, r.l.socketDir)
	if err != nil {
		return "", "", fmt.Errorf("the plugin advertised %s address %q: %w", network, addr, err)
	}
	r.mu.Lock()
	r.pins = append(r.pins, closer)
	r.mu.Unlock()
	return network, pinned, nil
}

// release closes what PluginToHost pinned, once nothing will dial it.
func (r *procRunner) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.pins {
		c.Close()
	}
	r.pins = nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// openVerified opens the binary at path and checks the open file's
// sha256 against sum. On Linux the plugin is executed from this very
// descriptor, so replacing the file at path after the check runs nothing
// new; want names the pinned digest in the error.
func openVerified(path string, sum []byte, want string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("hash %s: %w", path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum) {
		f.Close()
		return nil, fmt.Errorf("%w: want %s, got %s%x; the binary changed since it was loaded, refusing to start it",
			transport.ErrDigestMismatch, want, transport.DigestPrefix, got)
	}
	return f, nil
}

// inSocketDir checks that the plugin's address is a Unix socket directly
// in its socket directory.
func inSocketDir(network, addr, socketDir string) error {
	if network != "unix" || filepath.Dir(addr) != filepath.Clean(socketDir) {
		return fmt.Errorf("the host dials only a Unix socket in the plugin's socket directory %s", socketDir)
	}
	return nil
}
