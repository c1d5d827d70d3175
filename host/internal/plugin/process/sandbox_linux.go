package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The Linux sandbox of a process plugin.
//
// The host starts a plugin through a trampoline: itself, re-executed
// (/proc/self/exe, so a host binary replaced on disk still works) in new
// namespaces. The trampoline runs in the child before any plugin code:
// it mounts a fresh /proc, confines the filesystem, drops capabilities
// and privileges, reports what it obtained on fd 3, and execs the
// verified binary from fd 4 with the plugin's environment (go-plugin's
// handshake variables and nothing else). What the trampoline does is
// per thread (capabilities, uid, no_new_privs, Landlock), so it runs
// locked to the thread that execs.
//
// Invariants: the plugin's code never runs with a capability, with a
// writable filesystem outside its socket directory (where Landlock or a
// mount namespace is available), or — with isolation: required — with
// any measure missing; the binary that runs is the file whose digest
// was checked, not whatever the path names at exec time.

// HardenHost makes the host process non-dumpable: no core file (which
// would hold the judge API keys), and no process without CAP_SYS_PTRACE
// in the host's user namespace may read its memory or
// /proc/<pid>/environ — including a plugin or anything it starts under
// the host's uid. Call it first thing in main, after MaybeRunTrampoline.
func HardenHost() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("harden host: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

const (
	// trampolineArg0 and trampolineEnv mark a trampoline: both must be
	// present, so running the host with one of them by accident does not
	// turn it into one.
	trampolineArg0 = "anvil-plugin-sandbox"
	trampolineEnv  = "ANVIL_PLUGIN_SANDBOX"
	// The trampoline's files: the report pipe and the verified binary.
	trampolineReportFD = 3
	trampolineBinaryFD = 4
	// nobody is the uid and gid a root host runs plugins as.
	nobody = 65534
	// trampolineRefused is the trampoline's exit code when isolation is
	// required and missing: the plugin was not started.
	trampolineRefused = 126
)

// MaybeRunTrampoline turns this process into a plugin sandbox trampoline
// when the host started it as one, and never returns then; otherwise it
// returns at once. Every binary that starts process plugins (the host,
// and test binaries that load them) must call it first thing in main or
// TestMain.
func MaybeRunTrampoline() {
	if len(os.Args) == 0 || os.Args[0] != trampolineArg0 {
		return
	}
	spec, ok := os.LookupEnv(trampolineEnv)
	if !ok {
		return
	}
	os.Exit(runTrampoline(spec))
}

// trampolineSpec is what the host tells the trampoline (in its
// environment: it holds no secret).
type trampolineSpec struct {
	Path      string   `json:"path"`       // the plugin's path: its argv[0], and its directory the working directory
	Env       []string `json:"env"`        // the plugin's whole environment
	SocketDir string   `json:"socket_dir"` // go-plugin's sockets: the one writable directory
	// Have is what the plugin has before the trampoline runs: the
	// namespaces clone created, an unprivileged host uid.
	Have       transport.Confinement `json:"have"`
	Refuse     transport.Confinement `json:"refuse"`      // measures to treat as refused (tests)
	NoLandlock bool                  `json:"no_landlock"` // treat Landlock as missing (tests)
	DropTo     int                   `json:"drop_to"`     // uid and gid to run the plugin as; -1 keeps the trampoline's
	Required   bool                  `json:"required"`    // refuse to exec the plugin with a measure missing
}

// trampolineReport is what the trampoline obtained.
type trampolineReport struct {
	Obtained transport.Confinement `json:"obtained"`
	Landlock int                   `json:"landlock_abi"`
	Notes    []string              `json:"notes"`
}

var errSimulated = errors.New("refused (simulated)")

// runTrampoline confines this process and execs the plugin. It returns
// only on failure, with the exit code.
func runTrampoline(raw string) int {
	// Never unlocked: the measures below are per thread, and the thread
	// that takes them must be the one that execs.
	runtime.LockOSThread()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "anvil plugin sandbox: "+format+"\n", args...)
		return 125
	}
	var s trampolineSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return fail("spec: %v", err)
	}
	got := s.Have
	var notes []string
	refused := func(c transport.Confinement, what string) bool {
		if s.Refuse&c != 0 {
			notes = append(notes, what+": "+errSimulated.Error())
			return true
		}
		return false
	}
	step := func(what string, err error) bool {
		if err != nil {
			notes = append(notes, what+": "+err.Error())
		}
		return err == nil
	}

	if got&transport.ConfineMountNS != 0 && !step("make mounts private",
		unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")) {
		got &^= transport.ConfineMountNS // what it mounts would reach the host: mount nothing
	}
	// A /proc of the plugin's own PID namespace: the host's pids, and
	// their environ, cmdline and mem, are not even named there.
	if got&transport.ConfineMountNS != 0 && got&transport.ConfinePIDNS != 0 && !refused(transport.ConfineProc, "mount /proc") &&
		step("mount /proc", unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")) {
		got |= transport.ConfineProc
	}

	// The ruleset is built now, while the directories are still
	// reachable as root, and enforced last.
	ruleset, rulesetFlags, abi := -1, uint32(0), 0
	switch {
	case refused(transport.ConfineReadOnly, "read-only filesystem"):
	case s.NoLandlock:
		notes = append(notes, "landlock: "+errSimulated.Error())
	default:
		var err error
		ruleset, rulesetFlags, abi, err = landlockRuleset(s.SocketDir)
		step("landlock", err)
	}
	if ruleset < 0 && s.Refuse&transport.ConfineReadOnly == 0 {
		if got&transport.ConfineMountNS == 0 {
			notes = append(notes, "read-only remount: no mount namespace")
		} else if step("read-only remount", readOnlyMounts(s.SocketDir)) {
			got |= transport.ConfineReadOnly
		}
	}

	step("no core files", unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}))
	// Files it may create (in the socket directory) stay empty: it cannot
	// fill the host's disk through them.
	step("no file content", unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{}))
	step("working directory", os.Chdir(filepath.Dir(s.Path)))
	// Nothing of the host's but the binary (fd 4: an interpreter reopens
	// a script through /proc/self/fd/4) reaches the plugin.
	step("close descriptors", unix.CloseRange(trampolineBinaryFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC))

	// The bounding set first: dropping it takes CAP_SETPCAP, which the
	// uid change below takes away.
	keepCaps := refused(transport.ConfineNoCaps, "drop capabilities")
	bsetEmpty := !keepCaps && step("drop bounding set", dropBoundingSet())
	env := s.Env
	if s.DropTo >= 0 && !refused(transport.ConfineUnprivileged, "unprivileged uid") &&
		step(fmt.Sprintf("run as uid %d", s.DropTo), setIDs(s.DropTo)) {
		got |= transport.ConfineUnprivileged
	} else {
		// Still the host's uid: go-plugin must not try to give its
		// socket to nobody's group, which it cannot without CAP_CHOWN.
		env = withoutVar(env, "PLUGIN_UNIX_SOCKET_GROUP")
	}
	capsClear := !keepCaps && step("clear capabilities", clearCapabilities())
	if !refused(transport.ConfineNoNewPrivs, "no_new_privs") &&
		step("no_new_privs", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		got |= transport.ConfineNoNewPrivs
	}
	// With no_new_privs, exec grants no capability the process does not
	// hold; without it, only an empty bounding set keeps a root exec
	// from regaining them.
	if capsClear && (bsetEmpty || got&transport.ConfineNoNewPrivs != 0) {
		got |= transport.ConfineNoCaps
	}
	if ruleset >= 0 {
		if step("landlock", ll.LandlockRestrictSelf(ruleset, rulesetFlags)) {
			got |= transport.ConfineReadOnly
		} else {
			abi = 0
		}
		unix.Close(ruleset)
	}
	// A uid change clears the parent-death signal: set it again, then
	// make sure the host did not die before it was set (its end of our
	// stdout is then gone).
	step("parent-death signal", unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0))
	if fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}}; func() bool {
		_, err := unix.Poll(fds, 0)
		return err == nil && fds[0].Revents&unix.POLLERR != 0
	}() {
		return fail("the host is gone")
	}

	rep := os.NewFile(trampolineReportFD, "report")
	b, _ := json.Marshal(trampolineReport{Obtained: got, Landlock: abi, Notes: notes})
	_, werr := rep.Write(b)
	rep.Close()
	if werr != nil {
		return fail("report: %v", werr)
	}
	if missing := transport.ConfineAll &^ got; s.Required && missing != 0 {
		fmt.Fprintf(os.Stderr, "anvil plugin sandbox: isolation: required, and %s is missing; plugin not started\n", missing)
		return trampolineRefused
	}
	argv := []string{s.Path}
	err := syscall.Exec(fmt.Sprintf("/proc/self/fd/%d", trampolineBinaryFD), argv, env)
	if errors.Is(err, syscall.ENOENT) {
		// No /proc at all: the path is the only way left.
		err = syscall.Exec(s.Path, argv, env)
	}
	fmt.Fprintf(os.Stderr, "anvil plugin sandbox: exec %s: %v\n", s.Path, err)
	return 127 // as a shell says "cannot run"
}

// withoutVar is env without the variable name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// landlockRuleset builds the plugin's Landlock ruleset: read and execute
// everywhere; in the socket directory, only what go-plugin does there
// (create a socket through a temporary file, connect to the host's,
// remove its own) — no symlink, directory or device; write /dev/null. On
// kernels that can, also no TCP or UDP, no abstract Unix socket or signal
// out of the sandbox, and no connect to a pathname Unix socket outside
// the socket directory. fd is -1 when the kernel has no Landlock.
func landlockRuleset(socketDir string) (fd int, flags uint32, abi int, err error) {
	abi, err = ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return -1, 0, 0, fmt.Errorf("not available (%v)", err)
	}
	fd, flags, err = landlock.V11.BestEffort().NewRulesetFD(
		landlock.RODirs("/"),
		landlock.PathAccess(ll.AccessFSMakeReg|ll.AccessFSWriteFile|ll.AccessFSRemoveFile|ll.AccessFSMakeSock|ll.AccessFSResolveUnix, socketDir),
		landlock.RWFiles("/dev/null").IgnoreIfMissing(),
	)
	if err != nil || fd < 0 {
		return -1, 0, 0, fmt.Errorf("ruleset: %v", err)
	}
	// go-landlock knows ABIs up to 11; a newer kernel enforces that much.
	return fd, flags, min(abi, 11), nil
}

// readOnlyMounts makes every mount read-only except a bind of the socket
// directory: the fallback without Landlock. In a mount namespace of a
// new user namespace the kernel locks the flag, so the plugin cannot
// remount it writable.
func readOnlyMounts(socketDir string) error {
	if err := unix.Mount(socketDir, socketDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", socketDir, err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("mount_setattr /: %w", err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, socketDir, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("mount_setattr %s: %w", socketDir, err)
	}
	return nil
}

// dropBoundingSet empties this thread's capability bounding set, so an
// exec as (namespace) root cannot regain capabilities.
func dropBoundingSet() error {
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) && c > 0 {
			return nil // past the last capability this kernel knows
		}
		if err != nil {
			return err
		}
	}
}

// clearCapabilities empties this thread's ambient, inheritable,
// permitted and effective sets.
func clearCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("ambient: %w", err)
	}
	var data [2]unix.CapUserData
	return unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0])
}

// setIDs makes this thread's uid and gid id, with no supplementary
// groups. Raw syscalls: the Go wrappers change every thread, and only
// this one execs.
func setIDs(id int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(id), uintptr(id), uintptr(id)); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(id), uintptr(id), uintptr(id)); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	return nil
}

// Host side.

// cloneAttempt is one way to start the trampoline, most isolated first;
// when the kernel refuses one, the next is tried.
type cloneAttempt struct {
	ns     transport.Confinement
	attr   syscall.SysProcAttr
	dropTo int
}

const allNamespaces = transport.ConfineUserNS | transport.ConfinePIDNS | transport.ConfineNetNS | transport.ConfineMountNS | transport.ConfineIPCNS | transport.ConfineUTSNS

// cloneAttempts are the ways to start a plugin for a host running as
// euid/egid. A root host maps root to root in the new user namespace
// (the trampoline needs it to reach the binary and mount) and nobody to
// nobody, which the plugin runs as: plugin code running as the host's
// root — even without capabilities — would own every root file and
// socket (a container runtime's, an init system's). An unprivileged
// host maps itself to root inside, and the plugin keeps that uid without
// capabilities. Without a user namespace, root can still create the
// other namespaces.
func cloneAttempts(euid, egid int) []cloneAttempt {
	base := syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	full := base
	full.Cloneflags = flags
	if euid != 0 {
		full.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: euid, Size: 1}}
		full.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: egid, Size: 1}}
		return []cloneAttempt{{ns: allNamespaces, attr: full, dropTo: -1}, {attr: base, dropTo: -1}}
	}
	full.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}}
	full.GidMappings = full.UidMappings
	full.GidMappingsEnableSetgroups = true
	noUser := base
	noUser.Cloneflags = flags &^ unix.CLONE_NEWUSER
	return []cloneAttempt{
		{ns: allNamespaces, attr: full, dropTo: nobody},
		{ns: allNamespaces &^ transport.ConfineUserNS, attr: noUser, dropTo: nobody},
		{attr: base, dropTo: nobody},
	}
}

// socketGroup is the group go-plugin gives its socket directory and
// sockets, so that a plugin running as nobody can use them; "" when the
// plugin keeps the host's uid.
func socketGroup(knobs sandboxKnobs) string {
	if os.Geteuid() != 0 || knobs.off {
		return ""
	}
	return fmt.Sprint(nobody)
}

// startSandboxed starts the plugin described by l in the strongest
// sandbox the kernel grants, its stdout and stderr on the given files.
func startSandboxed(ctx context.Context, l *launch, stdout, stderr *os.File, exited <-chan struct{}) (*started, error) {
	rep := &transport.IsolationReport{Mode: l.mode.OrDefault(), Requested: transport.ConfineAll}
	euid := os.Geteuid()
	var have transport.Confinement
	if euid != 0 {
		have = transport.ConfineUnprivileged
	}
	if l.knobs.off {
		cmd := &exec.Cmd{Path: l.path, Args: []string{l.path}, Env: l.env, Dir: filepath.Dir(l.path), Stdout: stdout, Stderr: stderr,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
		rep.Obtained, rep.Notes = have, []string{"isolation off"}
		if err := start(cmd, exited); err != nil {
			return nil, err
		}
		return &started{cmd: cmd, report: rep}, nil
	}

	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer repR.Close()
	spec := trampolineSpec{Path: l.path, Env: l.env, SocketDir: l.socketDir, Refuse: l.knobs.refuse,
		NoLandlock: l.knobs.noLandlock, Required: rep.Mode == transport.IsolationRequired}
	var cmd *exec.Cmd
	var ns transport.Confinement
	for _, a := range cloneAttempts(euid, os.Getegid()) {
		if r := a.ns & l.knobs.refuse; r != 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("clone (%s): %v", r, errSimulated))
			continue
		}
		spec.Have, spec.DropTo = have|a.ns, a.dropTo
		b, _ := json.Marshal(spec)
		attr := a.attr
		c := &exec.Cmd{
			// Not os.Executable: /proc/self/exe is this very image even
			// if the host's file was replaced since it started.
			Path:        "/proc/self/exe",
			Args:        []string{trampolineArg0},
			Env:         []string{trampolineEnv + "=" + string(b)},
			Stdout:      stdout,
			Stderr:      stderr,
			ExtraFiles:  []*os.File{repW, l.bin}, // fds 3 and 4
			SysProcAttr: &attr,
		}
		err := startMapped(c, exited)
		if err == nil {
			cmd, ns = c, a.ns
			break
		}
		if a.ns == 0 || !cloneRefused(err) {
			repW.Close()
			return nil, fmt.Errorf("start the plugin sandbox: %w", err)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("clone (%s): %v", a.ns, err))
	}
	repW.Close()
	if cmd == nil {
		return nil, errors.New("start the plugin sandbox: no way to start it was left")
	}
	var tr trampolineReport
	if err := readReport(ctx, repR, &tr); err != nil {
		// The trampoline died before it could say: its stderr says why,
		// and the process is gone before any handshake.
		tr.Obtained = have | ns
		tr.Notes = append(tr.Notes, "sandbox report: "+err.Error())
	}
	rep.Obtained, rep.Landlock = tr.Obtained, tr.Landlock
	rep.Notes = append(rep.Notes, tr.Notes...)
	return &started{cmd: cmd, report: rep, pidNS: ns&transport.ConfinePIDNS != 0}, nil
}

// dumpableMu serialises what startMapped does to the process-wide
// dumpable flag.
var dumpableMu sync.Mutex

// startMapped starts cmd; when an unprivileged host maps ids into a new
// user namespace, it does so with the host dumpable for the duration. A
// child inherits the flag, and /proc/<pid>/uid_map of a non-dumpable
// process belongs to root, which the host then cannot write. The window
// is the start of one process, and who could use it must name the host's
// pid and share its uid: not a plugin in its own PID namespace.
func startMapped(cmd *exec.Cmd, exited <-chan struct{}) error {
	if len(cmd.SysProcAttr.UidMappings) == 0 || os.Geteuid() == 0 {
		return start(cmd, exited)
	}
	dumpableMu.Lock()
	defer dumpableMu.Unlock()
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err == nil {
			defer unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		}
	}
	return start(cmd, exited)
}

// readReport reads the trampoline's report: it is complete when the
// trampoline closes the pipe, by exec or exit.
func readReport(ctx context.Context, r *os.File, tr *trampolineReport) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(transport.MinWarmup)
	}
	if err := r.SetReadDeadline(deadline); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New("none (the sandbox exited first)")
	}
	return json.Unmarshal(b, tr)
}

// cloneRefused reports whether a start failed because the kernel (or a
// security policy) refused a namespace or an id mapping, as opposed to
// anything else going wrong.
func cloneRefused(err error) bool {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.EINVAL, unix.ENOSPC, unix.EUSERS, unix.ENOSYS, unix.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return strings.Contains(err.Error(), "uid_map") || strings.Contains(err.Error(), "gid_map")
}
