package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

// OS isolation of process plugins.
//
// A process plugin is native code. The host asks the kernel to confine it
// (process/sandbox_linux.go): new user, PID, network, mount, IPC and UTS
// namespaces, a fresh /proc, a read-only view of the filesystem (Landlock,
// or a read-only remount where Landlock is missing), no_new_privs, no
// capabilities, and — when the host runs as root — an unprivileged uid.
// What the kernel granted is recorded per plugin in Info.Isolation; what
// it refused is logged once at load, and with IsolationRequired it is a
// load error instead, before the plugin's code runs.

// Confinement is a set of OS isolation measures for a process plugin.
type Confinement uint16

// The measures. The names are the JSON and CLI names.
const (
	// ConfineUserNS: a new user namespace, so the plugin holds no
	// capability over the host's namespace (it cannot ptrace the host or
	// read its /proc/<pid>/environ even as root).
	ConfineUserNS Confinement = 1 << iota
	// ConfinePIDNS: a new PID namespace: the plugin is its PID 1, sees
	// none of the host's processes, and everything it spawns dies with it.
	ConfinePIDNS
	// ConfineNetNS: a new network namespace: no interface but a loopback
	// that is down; no TCP, UDP, DNS or abstract Unix socket reaches out.
	ConfineNetNS
	// ConfineMountNS: a new mount namespace, private: nothing the
	// sandbox mounts is seen outside it.
	ConfineMountNS
	// ConfineIPCNS: a new IPC namespace (System V IPC, POSIX queues).
	ConfineIPCNS
	// ConfineUTSNS: a new UTS namespace (hostname).
	ConfineUTSNS
	// ConfineProc: a fresh /proc showing only the plugin's own PID namespace.
	ConfineProc
	// ConfineReadOnly: the plugin can write nowhere except the socket
	// directory go-plugin needs (Landlock, or a read-only remount).
	ConfineReadOnly
	// ConfineNoNewPrivs: no_new_privs: no set-uid or file capability
	// gains through exec.
	ConfineNoNewPrivs
	// ConfineNoCaps: the plugin starts with no capabilities at all (empty
	// bounding, inheritable and ambient sets).
	ConfineNoCaps
	// ConfineUnprivileged: the plugin's uid outside its namespace is not
	// root (a root host runs it as nobody, 65534).
	ConfineUnprivileged

	confineEnd
)

// ConfineAll is every measure: what the host asks for, and what
// IsolationRequired demands.
const ConfineAll = confineEnd - 1

var confinementNames = [...]string{
	"user_ns", "pid_ns", "net_ns", "mount_ns", "ipc_ns", "uts_ns",
	"fresh_proc", "read_only_fs", "no_new_privs", "no_capabilities", "unprivileged_uid",
}

// Names lists the measures in c, in a fixed order.
func (c Confinement) Names() []string {
	names := []string{}
	for i, n := range confinementNames {
		if c&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

func (c Confinement) String() string {
	if c == 0 {
		return "none"
	}
	return strings.Join(c.Names(), ", ")
}

// MarshalJSON writes the set as a list of names.
func (c Confinement) MarshalJSON() ([]byte, error) { return json.Marshal(c.Names()) }

// UnmarshalJSON reads a list of names; an unknown name is an error.
func (c *Confinement) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*c = 0
next:
	for _, n := range names {
		for i, m := range confinementNames {
			if n == m {
				*c |= 1 << i
				continue next
			}
		}
		return fmt.Errorf("unknown isolation measure %q", n)
	}
	return nil
}

// IsolationMode is the operator's isolation policy for a process plugin
// (config key `isolation`); it lives in host/internal/pluginconfig with the
// rest of a plugin's config surface.
type IsolationMode = pluginconfig.IsolationMode

const (
	// IsolationBestEffort (the default): take what the kernel grants,
	// warn once naming what is missing.
	IsolationBestEffort = pluginconfig.IsolationBestEffort
	// IsolationRequired: a missing measure is a load error naming the
	// plugin and the measure, and the plugin's code does not run.
	IsolationRequired = pluginconfig.IsolationRequired
)

// IsolationReport is what a process plugin asked the OS for and what it
// got, for its last start.
type IsolationReport struct {
	Mode      IsolationMode `json:"mode"`
	Requested Confinement   `json:"requested"`
	Obtained  Confinement   `json:"obtained"`
	// Landlock is the Landlock ABI version enforced; 0 when Landlock was
	// not used (then read_only_fs, if obtained, is a read-only remount).
	Landlock int `json:"landlock_abi"`
	// Notes say why a measure is missing, in the kernel's words.
	Notes []string `json:"notes,omitempty"`
}

// Missing is what was asked for and not obtained.
func (r *IsolationReport) Missing() Confinement { return r.Requested &^ r.Obtained }

// Filesystem says how the filesystem is confined.
func (r *IsolationReport) Filesystem() string {
	switch {
	case r.Obtained&ConfineReadOnly == 0:
		return "writable"
	case r.Landlock > 0:
		return fmt.Sprintf("read-only (Landlock ABI %d)", r.Landlock)
	default:
		return "read-only (mount)"
	}
}

// Summary is one line for people: what is missing, or that nothing is.
func (r *IsolationReport) Summary() string {
	if m := r.Missing(); m != 0 {
		s := fmt.Sprintf("PARTIAL: missing %s; filesystem %s", m, r.Filesystem())
		if len(r.Notes) > 0 {
			s += " (" + strings.Join(r.Notes, "; ") + ")"
		}
		return s
	}
	return "full: namespaces user, pid, net, mount, ipc, uts; fresh /proc; filesystem " + r.Filesystem() +
		"; no_new_privs; no capabilities; unprivileged uid"
}

// ErrIsolationMissing is wrapped by the load error of a plugin configured
// with `isolation: required` that the kernel could not fully isolate.
var ErrIsolationMissing = errors.New("OS isolation required but missing")
