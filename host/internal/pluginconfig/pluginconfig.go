// Package pluginconfig is what an operator configures for a plugin —
// grants, limits, the isolation policy of a process plugin — with the
// defaults and parsing of those values, apart from the runtime that
// enforces them.
//
// It exists so that parsing anvil.yaml (host/internal/config) does not link
// the plugin runtime (wazero, Extism, go-plugin and its gRPC): the plugin
// package aliases these types, so the two are one type.
//
// Invariants: this package imports only the standard library, abi and
// host/internal/duration (TestConfigSurfaceIsPure in host/internal/config
// enforces it); everything here is pure. A zero field of Limits means "the
// default", never "no limit": WithDefaults fills it from DefaultLimits, so a
// limit cannot be switched off through this type.
package pluginconfig

import (
	"cmp"
	"fmt"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
)

// Grants are the capabilities an operator gives a plugin.
type Grants struct {
	Judge bool `yaml:"judge" json:"judge"`
}

// Has reports whether capability c is granted.
func (g Grants) Has(c abi.Capability) bool {
	switch c {
	case abi.CapJudge:
		return g.Judge
	}
	return false
}

// Limits bound one invocation (one Prepare, Measure or Node call).
type Limits struct {
	// MemoryPages caps guest linear memory in 64 KiB pages (wasm only).
	MemoryPages uint32 `yaml:"memory_pages" json:"memory_pages"`
	// Timeout bounds the wall-clock time of one invocation while the guest
	// runs; its waits on judge calls and embeddings are not counted (the
	// judge's own timeout bounds them, and a batched judge takes hours).
	Timeout duration.Duration `yaml:"timeout" json:"timeout"`
	// MaxJudgeCalls caps the judge requests one invocation may make.
	MaxJudgeCalls int `yaml:"max_judge_calls" json:"max_judge_calls"`
	// MaxJudgeTokens caps input+output judge tokens of one invocation.
	MaxJudgeTokens int `yaml:"max_judge_tokens" json:"max_judge_tokens"`
	// MaxOutputBytes caps the JSON result (and each host-call payload) a guest returns.
	MaxOutputBytes int `yaml:"max_output_bytes" json:"max_output_bytes"`
	// PoolSize is the number of pre-initialised instances kept per plugin (wasm).
	PoolSize int `yaml:"pool_size" json:"pool_size"`
	// MaxLogRecords and MaxLogBytes bound the anvil_log records one
	// invocation may leave; the excess is dropped and counted.
	MaxLogRecords int `yaml:"max_log_records" json:"max_log_records"`
	MaxLogBytes   int `yaml:"max_log_bytes" json:"max_log_bytes"`
	// MaxModuleBytes caps the size of a Wasm module file, checked before it
	// is read.
	MaxModuleBytes int64 `yaml:"max_module_bytes" json:"max_module_bytes"`
	// CompileTimeout bounds compiling a Wasm module (on a cold cache).
	CompileTimeout duration.Duration `yaml:"compile_timeout" json:"compile_timeout"`
	// MaxFuel bounds the work of one invocation of a Wasm guest in fuel:
	// one unit per Wasm instruction it runs, bulk memory and table
	// operations by their size. Unlike Timeout it is the same on every
	// machine. 0: unlimited (Timeout still applies).
	MaxFuel uint64 `yaml:"max_fuel" json:"max_fuel"`
}

// DefaultLimits are applied to zero fields.
var DefaultLimits = Limits{
	MemoryPages:    1024, // 64 MiB: a Go guest's runtime alone wants ~10 MiB
	Timeout:        duration.Duration(2 * time.Minute),
	MaxJudgeCalls:  64,
	MaxJudgeTokens: 256_000,
	MaxOutputBytes: 1 << 20,
	PoolSize:       4,
	MaxLogRecords:  128,
	MaxLogBytes:    64 << 10,
	MaxModuleBytes: 64 << 20, // a Go guest is 3–10 MB
	CompileTimeout: duration.Duration(time.Minute),
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	l.MemoryPages = cmp.Or(l.MemoryPages, d.MemoryPages)
	l.Timeout = cmp.Or(l.Timeout, d.Timeout)
	l.MaxJudgeCalls = cmp.Or(l.MaxJudgeCalls, d.MaxJudgeCalls)
	l.MaxJudgeTokens = cmp.Or(l.MaxJudgeTokens, d.MaxJudgeTokens)
	l.MaxOutputBytes = cmp.Or(l.MaxOutputBytes, d.MaxOutputBytes)
	l.PoolSize = cmp.Or(l.PoolSize, d.PoolSize)
	l.MaxLogRecords = cmp.Or(l.MaxLogRecords, d.MaxLogRecords)
	l.MaxLogBytes = cmp.Or(l.MaxLogBytes, d.MaxLogBytes)
	l.MaxModuleBytes = cmp.Or(l.MaxModuleBytes, d.MaxModuleBytes)
	l.CompileTimeout = cmp.Or(l.CompileTimeout, d.CompileTimeout)
	return l
}

// IsolationMode is the operator's isolation policy for a process plugin
// (config key `isolation`).
type IsolationMode string

const (
	// IsolationBestEffort (the default): take what the kernel grants,
	// warn once naming what is missing.
	IsolationBestEffort IsolationMode = "best_effort"
	// IsolationRequired: a missing measure is a load error naming the
	// plugin and the measure, and the plugin's code does not run.
	IsolationRequired IsolationMode = "required"
)

// UnmarshalText accepts the two modes; "" means best_effort.
func (m *IsolationMode) UnmarshalText(b []byte) error {
	switch v := IsolationMode(b); v {
	case "", IsolationBestEffort, IsolationRequired:
		*m = v
		return nil
	default:
		return fmt.Errorf("isolation %q: want %q (the default) or %q", b, IsolationBestEffort, IsolationRequired)
	}
}

// OrDefault is the mode in force: "" (not configured) is best_effort.
func (m IsolationMode) OrDefault() IsolationMode {
	if m == "" {
		return IsolationBestEffort
	}
	return m
}
