package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
)

// FuzzPeerMessages: whatever a peer sends, decoding and checking it
// returns a value or an error — never a panic.
func FuzzPeerMessages(f *testing.F) {
	f.Add([]byte(`{"protocol":2,"identity":{"digest":"00","judges":[{"name":"default","model":"m"}],"kinds":[]},"run_id":"0123456789abcdef","generation":"0123456789abcdef","config_name":"anvil.yaml","config_yaml":"dmVyc2lvbjogMQ==","config_hash":"abcdef12","cache_mode":"rw","ack_wait_ms":1000,"plugins":{"p":"sha256:00"}}`))
	f.Add([]byte(`{"run_id":"0123456789abcdef","case":{"id":"c1","input":"x","extra":{"k":[1,2]}}}`))
	f.Add([]byte(`{"run_id":"0123456789abcdef","worker":"w","result":{"case_id":"c","config_hash":"h","metrics":[{"metric":"m","score":2}]}}`))
	f.Add([]byte(`{"run_id":"0123456789abcdef","worker":"w","kind":"refused","reason":"r"}`))
	f.Add([]byte(`{"judge":"j","tokens":-1,"lease":"x","worker":"w"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d RunDescription
		if decodeStrict(data, maxDescription, &d) == nil {
			_ = d.validate()
		}
		var c CaseMessage
		if decodeStrict(data, maxCaseMessage, &c) == nil {
			_ = c.validate("0123456789abcdef")
		}
		var r ResultMessage
		_ = decodeStrict(data, maxResult, &r)
		var fm FaultMessage
		if decodeStrict(data, maxFault, &fm) == nil {
			_ = fm.validate("0123456789abcdef")
		}
		var p permitRequest
		_ = decodeStrict(data, maxPermitMsg, &p)
	})
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name, data, want string
		limit            int
	}{
		{"unknown field", `{"run_id":"a","cas":{}}`, "unknown field", 1 << 10},
		{"trailing data", `{"run_id":"a"} {"run_id":"b"}`, "trailing data", 1 << 10},
		{"too large", `{"run_id":"` + strings.Repeat("a", 100) + `"}`, "over the 64-byte limit", 64},
		{"not JSON", `run_id: a`, "decode", 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m CaseMessage
			err := decodeStrict([]byte(tt.data), tt.limit, &m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decodeStrict = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRunDescriptionValidate(t *testing.T) {
	good := RunDescription{Protocol: protocolVersion, RunID: "0123456789abcdef", Generation: "fedcba9876543210",
		ConfigName: "anvil.yaml", ConfigYAML: []byte("version: 1"), ConfigHash: "abcdef12", CacheMode: "rw", AckWaitMS: 1000,
		Plugins:  map[string]string{"textcheck": "sha256:" + strings.Repeat("a", 64)},
		Identity: identity.New(nil, engine.BuiltinKinds())}
	if err := good.validate(); err != nil {
		t.Fatalf("good description: %v", err)
	}
	tests := []struct {
		name   string
		tamper func(*RunDescription)
		want   string
	}{
		{"protocol", func(d *RunDescription) { d.Protocol = 1 }, "protocol 1"},
		{"identity not its digest's", func(d *RunDescription) {
			d.Identity.Kinds = slices.Clone(d.Identity.Kinds)
			d.Identity.Kinds[0].Version = "9.9.9"
		}, "identity digest"},
		{"run id as subject wildcard", func(d *RunDescription) { d.RunID = "*" }, "run_id"},
		{"config name is a path", func(d *RunDescription) { d.ConfigName = "../../etc/passwd" }, "config_name"},
		{"plugin name is a path", func(d *RunDescription) { d.Plugins = map[string]string{"../x": "sha256:" + strings.Repeat("a", 64)} }, "plain name"},
		{"digest not sha256", func(d *RunDescription) { d.Plugins = map[string]string{"p": "md5:00"} }, "sha256:<64 hex>"},
		{"cache mode", func(d *RunDescription) { d.CacheMode = "all" }, "cache_mode"},
		{"ack wait", func(d *RunDescription) { d.AckWaitMS = 0 }, "ack_wait_ms"},
		{"empty config", func(d *RunDescription) { d.ConfigYAML = nil }, "config_yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good
			tt.tamper(&d)
			if err := d.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
