//go:build linux

package process

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/testknobs"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/internal/testkit"
)

// The OS isolation of process plugins (sandbox_linux.go), attacked by the
// hostile native guest (testdata/native/escape.go).

func TestHardenHost(t *testing.T) {
	if err := HardenHost(); err != nil {
		t.Fatal(err)
	}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || d != 0 {
		t.Fatalf("host is dumpable (%d, %v): plugins of its uid could read its memory and environ", d, err)
	}
}

// TestProcessIsolationObtained: on the kernels the tests run on, a
// process plugin gets every measure, and its report says so.
func TestProcessIsolationObtained(t *testing.T) {
	p := loadProcess(t, "hostile", transport.Options{})
	rep := p.Info().Isolation
	if rep == nil {
		t.Fatal("a process plugin without an isolation report")
	}
	t.Logf("isolation: %s", rep.Summary())
	if rep.Requested != transport.ConfineAll || rep.Missing() != 0 || rep.Mode != transport.IsolationBestEffort {
		t.Fatalf("want every measure, got %s", plugintest.MustJSON(t, rep))
	}
	if rep.Landlock < 1 {
		t.Errorf("read-only view without Landlock on a kernel that has it: %s", plugintest.MustJSON(t, rep))
	}
}

// unprivilegedHostEnv makes the test binary, when it starts with it, a
// host run by an unprivileged user (TestProcessIsolationUnprivilegedHost)
// instead of running the tests: it loads the native guest named by the
// variable ("path digest") and prints its isolation report.
const unprivilegedHostEnv = "ANVIL_TEST_UNPRIVILEGED_HOST"

func init() {
	arg, ok := os.LookupEnv(unprivilegedHostEnv)
	if !ok {
		return
	}
	path, digest, _ := strings.Cut(arg, " ")
	ctx := context.Background()
	err := HardenHost() // as cmd/anvil-host does: a non-dumpable host must still map ids
	var p transport.Plugin
	if err == nil {
		p, err = Load(ctx, path, digest, transport.Options{}, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(p.Info().Isolation)
	p.Close(ctx)
	os.Exit(0)
}

// TestProcessIsolationUnprivilegedHost: a host that is not root (here:
// nobody) gets the same isolation for its plugins, through a user
// namespace that maps it to root inside.
func TestProcessIsolationUnprivilegedHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become an unprivileged user (the tests themselves are then that host)")
	}
	// Copies nobody can reach: the test binary and the guest live in
	// directories only root may enter.
	dir := t.TempDir()
	for d := dir; d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host, guest := filepath.Join(dir, "host.test"), filepath.Join(dir, "hostile")
	copyFile(t, self, host)
	copyFile(t, filepath.Join(plugintest.NativeDir(), "native"), guest)
	cmd := exec.Command(host)
	cmd.Env = []string{unprivilegedHostEnv + "=" + guest + " " + plugintest.NativeDigest(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the unprivileged host: %v\n%s", err, stderr.String())
	}
	var rep transport.IsolationReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Missing() != 0 {
		t.Fatalf("an unprivileged host's plugin lacks %s: %s", rep.Missing(), out)
	}
}

// escapeVariants are the sandboxes the escapes run against: Landlock,
// and the read-only remount the host falls back to without it.
var escapeVariants = []struct {
	name  string
	knobs *testknobs.Knobs
}{
	{"landlock", nil},
	{"ro-mount", &testknobs.Knobs{NoLandlock: true}},
}

// escape runs one escape behaviour of the hostile guest and returns what
// it observed.
func escape(t *testing.T, p transport.Plugin, behaviour string, cfg map[string]any) map[string]any {
	t.Helper()
	cfg["behaviour"] = behaviour
	res, err := p.Measure(context.Background(), nil, plugintest.HostileRequest(behaviour, cfg))
	if err != nil || res.Error != nil {
		t.Fatalf("%s: %v / %s", behaviour, err, plugintest.MustJSON(t, res))
	}
	var obs map[string]any
	if err := json.Unmarshal(res.Details, &obs); err != nil {
		t.Fatal(err)
	}
	return obs
}

// allFailed requires every try the guest reports to have failed.
func allFailed(t *testing.T, obs map[string]any, allowed ...string) {
	t.Helper()
	tries, _ := obs["tries"].(map[string]any)
	if len(tries) == 0 {
		t.Fatalf("no tries reported: %v", obs)
	}
	for what, out := range tries {
		if out == "ok" && !contains(allowed, what) {
			t.Errorf("%s succeeded", what)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func nonce(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// TestProcessCannotReachTheKey: the guest looks for the judge key in the
// host's environ, cmdline and memory, by every /proc path it can think
// of, and finds neither the key nor the host.
func TestProcessCannotReachTheKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", plugintest.FakeSecret)
	if err := HardenHost(); err != nil { // as cmd/anvil-host does
		t.Fatal(err)
	}
	host := os.Getpid()
	for _, v := range escapeVariants {
		t.Run(v.name, func(t *testing.T) {
			p := loadProcess(t, "hostile", transport.Options{Test: v.knobs})
			obs := escape(t, p, "snoop", map[string]any{"n": host})
			if b, _ := json.Marshal(obs); bytes.Contains(b, []byte(plugintest.FakeSecret)) {
				t.Fatalf("the guest found the key: %s", b)
			}
			if found, _ := obs["found"].([]any); len(found) > 0 {
				t.Errorf("the guest found OPENAI_API_KEY values: %v", found)
			}
			if obs["ppid"] != 0.0 {
				t.Errorf("the guest sees its parent as pid %v, want 0 (outside its PID namespace)", obs["ppid"])
			}
			if obs["pid"] != 1.0 {
				t.Errorf("the guest is pid %v, want 1 of its own namespace", obs["pid"])
			}
			pids, _ := obs["pids"].([]any)
			for _, pid := range pids {
				if pid != 1.0 {
					t.Errorf("the guest's /proc shows pid %v: want only its own namespace (pid 1)", pid)
				}
			}
			reads, _ := obs["reads"].(map[string]any)
			for _, path := range []string{"/proc/" + strconv.Itoa(host) + "/environ", "/proc/self/../" + strconv.Itoa(host) + "/environ", "/proc/" + strconv.Itoa(host) + "/mem"} {
				if out, ok := reads[path]; !ok || out == "ok" {
					t.Errorf("%s: %v", path, out)
				}
			}
			for path, out := range reads {
				if out == "ok" && !strings.HasPrefix(path, "/proc/1/") {
					t.Errorf("the guest read %s", path)
				}
			}
		})
	}
}

// TestProcessHasNoNetwork: no TCP to the host's loopback or beyond, no
// UDP, no DNS, no Unix socket of the host's, abstract or on disk.
func TestProcessHasNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A root-owned socket in a directory anyone can enter, like a
	// container runtime's or an init system's.
	sockDir := t.TempDir()
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unixLn, err := net.Listen("unix", filepath.Join(sockDir, "host.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unixLn.Close()
	abstract := "anvil-test-" + nonce(t)
	absLn, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer absLn.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	for _, v := range escapeVariants {
		t.Run(v.name, func(t *testing.T) {
			p := loadProcess(t, "hostile", transport.Options{Test: v.knobs})
			obs := escape(t, p, "net", map[string]any{"n": port, "path": filepath.Join(sockDir, "host.sock"), "key": abstract})
			var allowed []string
			if rep := p.Info().Isolation; os.Geteuid() != 0 && rep.Landlock < 9 {
				// Same uid, and no Landlock ABI 9 to forbid the connect:
				// only file permissions guard a pathname socket.
				allowed = append(allowed, "unix path")
				t.Log("unprivileged host without Landlock ABI 9: a pathname Unix socket of the host's uid is reachable")
			}
			allFailed(t, obs, allowed...)
			if up, _ := obs["interfaces_up"].([]any); len(up) > 0 {
				t.Errorf("network interfaces up in the sandbox: %v", up)
			}
			for name, l := range map[string]net.Listener{"tcp": ln, "unix": unixLn, "abstract": absLn} {
				if name == "unix" && len(allowed) > 0 {
					continue
				}
				if c := acceptNow(t, l); c != nil {
					c.Close()
					t.Errorf("the guest connected to the host's %s listener", name)
				}
			}
		})
	}
}

// acceptNow returns a connection already queued on l, or nil.
func acceptNow(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	type deadliner interface{ SetDeadline(time.Time) error }
	if err := l.(deadliner).SetDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	defer l.(deadliner).SetDeadline(time.Time{})
	c, err := l.Accept()
	if err != nil {
		return nil
	}
	return c
}

// TestProcessCannotWrite: the guest changes nothing on the file system,
// even in a directory everyone may write, with or without Landlock.
func TestProcessCannotWrite(t *testing.T) {
	for _, v := range escapeVariants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("victim"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(victim, 0o666); err != nil { // past the umask
				t.Fatal(err)
			}
			key := nonce(t)
			leftovers := []string{filepath.Join(plugintest.NativeDir(), "pwned-"+key), filepath.Join(os.TempDir(), "anvil-pwned-"+key)}
			t.Cleanup(func() {
				for _, f := range leftovers {
					os.Remove(f)
				}
			})
			p := loadProcess(t, "hostile", transport.Options{Test: v.knobs})
			obs := escape(t, p, "write", map[string]any{"path": dir, "key": key})
			t.Logf("%v", obs["tries"])
			allFailed(t, obs)

			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Name() != "victim" {
				t.Errorf("the directory changed: %v", entries)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
				t.Errorf("the victim changed: %q, %v", b, err)
			}
			if st, err := os.Stat(victim); err == nil && st.Mode().Perm() != 0o666 {
				t.Errorf("the victim's mode changed: %v", st.Mode())
			}
			for _, f := range leftovers {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("the guest wrote %s", f)
				}
			}
		})
	}
}

// TestProcessHasNoPrivilege: no capability, no_new_privs, nobody's uid
// under a root host; no mount, no signal to the host, no way back to
// root.
func TestProcessHasNoPrivilege(t *testing.T) {
	for _, v := range escapeVariants {
		t.Run(v.name, func(t *testing.T) {
			mnt := t.TempDir()
			if err := os.Chmod(mnt, 0o777); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// Only ever needed if a mount got through.
				for unix.Unmount(mnt, unix.MNT_DETACH) == nil {
				}
			})
			p := loadProcess(t, "hostile", transport.Options{Test: v.knobs})
			obs := escape(t, p, "privs", map[string]any{"n": os.Getpid(), "path": mnt})
			if os.Geteuid() == 0 {
				allFailed(t, obs)
			} else {
				allFailed(t, obs, "setuid 0") // it is uid 0 in its namespace already
			}
			status, _ := obs["status"].(map[string]any)
			for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if status[k] != "0000000000000000" {
					t.Errorf("%s = %v, want no capability", k, status[k])
				}
			}
			if status["NoNewPrivs"] != "1" {
				t.Errorf("NoNewPrivs = %v", status["NoNewPrivs"])
			}
			if os.Geteuid() == 0 {
				// Seen from inside, through the mapping nobody -> nobody.
				if status["Uid"] != "65534 65534 65534 65534" || status["Gid"] != "65534 65534 65534 65534" || status["Groups"] != "" {
					t.Errorf("uid %v gid %v groups %v, want nobody's alone", status["Uid"], status["Gid"], status["Groups"])
				}
			}
		})
	}
}

// TestProcessDescendantsDieWithIt: what the plugin spawned — in a session
// of its own, out of its process group — dies when the plugin is closed.
func TestProcessDescendantsDieWithIt(t *testing.T) {
	key := nonce(t)
	t.Cleanup(func() {
		for _, pid := range findMarked(t, key) { // only if it survived
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	p, err := Load(context.Background(), plugintest.NativePath("hostile"), plugintest.NativeDigest(t), transport.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := escape(t, p, "spawn", map[string]any{"key": key})
	if obs["spawn"] != "ok" {
		t.Fatalf("spawn: %v", obs)
	}
	if len(findMarked(t, key)) == 0 {
		t.Fatal("the grandchild is not running")
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The kernel kills the namespace as PID 1 exits; reaping the others
	// takes a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := findMarked(t, key)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's grandchild outlived it: pids %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// findMarked lists the live processes whose argv ends in key.
func findMarked(t *testing.T, key string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(args) == 3 && args[1] == "grandchild" && args[2] == key {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestProcessAddressVetted: the host dials only a socket file in the
// plugin's socket directory, whatever address the plugin advertises — a
// plugin without network must not get the host to carry its cases out.
func TestProcessAddressVetted(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "decoy.sock")
	decoy, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer decoy.Close()
	for _, tc := range []struct {
		name, want string
		ln         net.Listener
	}{
		{"advertise-tcp-" + strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port), "dials only a Unix socket in the plugin's socket directory", tcp},
		{"advertise-unix-" + hex.EncodeToString([]byte(sock)), "not a socket file", decoy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			copyFile(t, filepath.Join(plugintest.NativeDir(), "native"), path)
			// Without Landlock, which would not let it make the symlink:
			// the host's own check is what is tested.
			p, err := Load(context.Background(), path, plugintest.NativeDigest(t), transport.Options{Test: &testknobs.Knobs{NoLandlock: true},
				Limits: transport.Limits{Timeout: duration.Duration(10 * time.Second)}}, nil)
			if err == nil {
				p.Close(context.Background())
				t.Fatal("loaded a plugin that advertised an address outside its socket directory")
			}
			if !strings.Contains(err.Error(), "advertised") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want a refusal saying %q, got %v", tc.want, err)
			}
			if c := acceptNow(t, tc.ln); c != nil {
				c.Close()
				t.Error("the host dialled the address the plugin advertised")
			}
		})
	}
}

// TestProcessIsolationRefused: what a kernel that refuses isolation gets
// (simulated: the test kernels grant everything). best_effort loads the
// plugin and warns once, naming what is missing; required refuses it at
// load, naming the plugin and what is missing, before its code runs.
func TestProcessIsolationRefused(t *testing.T) {
	ctx := context.Background()
	digest := plugintest.NativeDigest(t)
	for _, tc := range []struct {
		name    string
		mode    transport.IsolationMode
		refuse  transport.Confinement
		missing transport.Confinement // at least
	}{
		{"no network namespace", transport.IsolationRequired, transport.ConfineNetNS, transport.ConfineNetNS},
		{"no user namespace", transport.IsolationRequired, transport.ConfineUserNS, transport.ConfineUserNS},
		{"no fresh proc", transport.IsolationRequired, transport.ConfineProc, transport.ConfineProc},
		{"no read-only view", transport.IsolationRequired, transport.ConfineReadOnly, transport.ConfineReadOnly},
		{"nothing", transport.IsolationRequired, transport.ConfineAll, transport.ConfineAll},
		{"no network namespace, best effort", transport.IsolationBestEffort, transport.ConfineNetNS, transport.ConfineNetNS},
		{"nothing, best effort", "", transport.ConfineAll, transport.ConfineAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			// The canary leaves its mark if it runs: with nothing
			// isolated it can, so only a plugin that never ran leaves none.
			dir := t.TempDir()
			canary := filepath.Join(dir, "canary")
			copyFile(t, plugintest.NativePath("canary"), canary)
			p, err := Load(ctx, canary, digest, transport.Options{Isolation: tc.mode, Test: &testknobs.Knobs{Refuse: uint16(tc.refuse)},
				Limits: transport.Limits{Timeout: duration.Duration(30 * time.Second)}}, logger)
			_, markErr := os.Stat(canary + ".started")
			if tc.mode == transport.IsolationRequired {
				if err == nil {
					p.Close(ctx)
					t.Fatal("loaded without the isolation it requires")
				}
				msg := err.Error()
				if !errors.Is(err, transport.ErrIsolationMissing) || !strings.Contains(msg, canary) || !strings.Contains(msg, digest) ||
					!strings.Contains(msg, "isolation: required") || !strings.Contains(msg, "not started") {
					t.Fatalf("want a refusal naming plugin, digest and policy, got %v", err)
				}
				for _, m := range tc.missing.Names() {
					if !strings.Contains(msg, m) {
						t.Errorf("the refusal does not name %s: %s", m, msg)
					}
				}
				if !strings.Contains(msg, "simulated") {
					t.Errorf("the refusal does not say why: %s", msg)
				}
				if markErr == nil {
					t.Error("the plugin ran although its isolation was refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			rep := p.Info().Isolation
			if rep.Mode != transport.IsolationBestEffort || rep.Missing()&tc.missing != tc.missing {
				t.Errorf("report %s, want %s missing", plugintest.MustJSON(t, rep), tc.missing)
			}
			warns := strings.Count(logs.String(), "level=WARN")
			if warns != 1 || !strings.Contains(logs.String(), "without full OS isolation") || !strings.Contains(logs.String(), "net_ns") {
				t.Errorf("want one WARN naming what is missing, got:\n%s", logs.String())
			}
			if tc.refuse == transport.ConfineAll && markErr != nil {
				t.Errorf("the unconfined canary left no mark (%v): the check above proves nothing", markErr)
			}
		})
	}
}

// TestIsolationModeConfig: the config values, and a wrong one named.
func TestIsolationModeConfig(t *testing.T) {
	for in, want := range map[string]transport.IsolationMode{"": "", "best_effort": transport.IsolationBestEffort, "required": transport.IsolationRequired} {
		var m transport.IsolationMode
		if err := m.UnmarshalText([]byte(in)); err != nil || m != want {
			t.Errorf("%q: %q, %v", in, m, err)
		}
	}
	var m transport.IsolationMode
	if err := m.UnmarshalText([]byte("strict")); err == nil || !strings.Contains(err.Error(), `"strict"`) || !strings.Contains(err.Error(), "required") {
		t.Errorf("want an error naming the value and the choices, got %v", err)
	}
}

// BenchmarkProcessStart is what a process plugin start costs (load:
// start, handshake, describe; then close), with the sandbox and without:
// wall time, and the CPU time of the plugin processes (the trampoline
// included), which a loaded machine disturbs less.
func BenchmarkProcessStart(b *testing.B) {
	ctx := context.Background()
	for _, v := range []struct {
		name  string
		knobs *testknobs.Knobs
	}{{"isolated", nil}, {"unisolated", &testknobs.Knobs{SandboxOff: true}}} {
		b.Run(v.name, func(b *testing.B) {
			digest := plugintest.NativeDigest(b)
			before := childrenCPU(b)
			for b.Loop() {
				p, err := Load(ctx, plugintest.NativePath("hostile"), digest, transport.Options{Test: v.knobs}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(childrenCPU(b)-before)/float64(time.Millisecond)/float64(b.N), "child-cpu-ms/op")
		})
	}
}

// childrenCPU is the user and system time of this process's reaped
// children so far.
func childrenCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
