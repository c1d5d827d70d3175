package pluginconfig

import (
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
)

// A zero field takes its default and a set field is kept, field by field.
func TestLimitsWithDefaults(t *testing.T) {
	if got := (Limits{}).WithDefaults(); got != DefaultLimits {
		t.Errorf("zero limits = %+v; want DefaultLimits %+v", got, DefaultLimits)
	}
	set := Limits{
		MemoryPages: 16, Timeout: duration.Duration(5 * time.Second), MaxJudgeCalls: 3,
		MaxJudgeTokens: 1000, MaxOutputBytes: 512, PoolSize: 1, MaxLogRecords: 2,
		MaxLogBytes: 100, MaxModuleBytes: 1 << 10, CompileTimeout: duration.Duration(time.Second),
	}
	if got := set.WithDefaults(); got != set {
		t.Errorf("set limits became %+v; want them kept", got)
	}
	part := Limits{PoolSize: 7}.WithDefaults()
	if part.PoolSize != 7 || part.Timeout.Std() != 2*time.Minute || part.MemoryPages != 1024 || part.MaxModuleBytes != 64<<20 {
		t.Errorf("partly set limits = %+v", part)
	}
}

func TestGrantsHas(t *testing.T) {
	if (Grants{}).Has(abi.CapJudge) {
		t.Error("no grants has judge")
	}
	if !(Grants{Judge: true}).Has(abi.CapJudge) {
		t.Error("judge: true does not grant judge")
	}
	if (Grants{Judge: true}).Has(abi.Capability("network")) {
		t.Error("an unknown capability is granted")
	}
}

func TestIsolationMode(t *testing.T) {
	for in, want := range map[string]IsolationMode{"": "", "best_effort": IsolationBestEffort, "required": IsolationRequired} {
		var m IsolationMode
		if err := m.UnmarshalText([]byte(in)); err != nil || m != want {
			t.Errorf("%q: %q, %v", in, m, err)
		}
	}
	var m IsolationMode
	err := m.UnmarshalText([]byte("strict"))
	if err == nil || err.Error() != `isolation "strict": want "best_effort" (the default) or "required"` {
		t.Errorf("strict: %v", err)
	}
	for in, want := range map[IsolationMode]IsolationMode{"": IsolationBestEffort, IsolationBestEffort: IsolationBestEffort, IsolationRequired: IsolationRequired} {
		if got := in.OrDefault(); got != want {
			t.Errorf("%q.OrDefault() = %q; want %q", in, got, want)
		}
	}
}
