//go:build !linux

package process

import (
	"os"

	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// HardenHost has nothing to do outside Linux: process plugins are not
// isolated there at all (their isolation report says so).
func HardenHost() error { return nil }

// MaybeRunTrampoline returns at once: there is no sandbox trampoline
// outside Linux.
func MaybeRunTrampoline() {}

// socketGroup: outside Linux the plugin keeps the host's uid.
func socketGroup(sandboxKnobs) string { return "" }

// unisolated is the report of a plugin started without OS isolation.
func unisolated(l *launch) *transport.IsolationReport {
	rep := &transport.IsolationReport{Mode: l.mode.OrDefault(), Requested: transport.ConfineAll,
		Notes: []string{"OS isolation of process plugins is implemented on Linux only"}}
	if os.Geteuid() > 0 { // -1 where uids do not exist
		rep.Obtained = transport.ConfineUnprivileged
	}
	return rep
}
