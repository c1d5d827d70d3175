// Package testknobs holds the plugin packages' test-only knobs, carried
// across package lines in transport.Options.Test. It is internal to
// host/internal/plugin: only the plugin packages and their tests can name
// the type, so no other part of the host can turn a knob, and a nil
// *Knobs (production) turns none.
package testknobs

// Knobs change how a plugin is loaded or run, for tests only.
type Knobs struct {
	// ExtismIO calls a Wasm guest the Extism way even when it offers
	// direct I/O (what a host of ABI minor < 3 does).
	ExtismIO bool
	// SandboxOff starts a process plugin as the host did before isolation
	// existed (process group and parent-death signal only); benchmarks
	// compare.
	SandboxOff bool
	// Refuse lists isolation measures (a transport.Confinement, whose
	// package imports this one) the process sandbox treats as refused by
	// the kernel: the kernels the tests run on grant everything. For
	// namespaces, every clone asking for one fails as EPERM would.
	Refuse uint16
	// NoLandlock treats Landlock as missing, so the read-only view falls
	// back to a read-only remount.
	NoLandlock bool
}

// WasmExtismIO reports k.ExtismIO; a nil k turns nothing.
func (k *Knobs) WasmExtismIO() bool { return k != nil && k.ExtismIO }

// Sandbox is k's process-sandbox knobs; a nil k turns none.
func (k *Knobs) Sandbox() Knobs {
	if k == nil {
		return Knobs{}
	}
	return *k
}
