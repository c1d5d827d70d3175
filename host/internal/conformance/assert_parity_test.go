package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/internal/testkit"
	"github.com/agentanvil/anvil/plugins/assert"
)

// TestAssertTransportsAgree: the assert plugin linked into the host and
// its Wasm build give byte-identical results on the same requests — the
// host's in-process kinds and `plugin test`'s module are one code.
func TestAssertTransportsAgree(t *testing.T) {
	testkit.Long(t, "loads the assert plugin's Wasm build")
	ctx := context.Background()
	b, err := os.ReadFile(wasmPath("assert"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	rt, err := plugin.NewRuntime(ctx, plugin.RuntimeOptions{CacheDir: cacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	wasm, err := rt.Load(ctx, wasmPath("assert"), "sha256:"+hex.EncodeToString(sum[:]), plugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wasm.Close(ctx) })
	inproc := plugin.Inproc(assert.Plugin(), plugin.Options{})
	if got, want := mustMarshal(t, wasm.Info().Descriptor), mustMarshal(t, inproc.Info().Descriptor); !bytes.Equal(got, want) {
		t.Fatalf("descriptors differ:\nwasm   %s\ninproc %s", got, want)
	}
	svc := Services(nil)
	tools := []abi.ToolCall{{Name: "geocode", Arguments: json.RawMessage(`{"q":"Paris"}`)},
		{Name: "weather", Arguments: json.RawMessage(`{"lat":48.86,"units":"metric"}`), Output: json.RawMessage(`{"t":22}`)}}
	called := []abi.ToolCall{tools[1], {Name: "geocode", Arguments: json.RawMessage(`{"q":"paris"}`)}}
	c := abi.TestCase{ID: "c", Input: "q", ActualOutput: `{"city":"Paris","t":22} — naïve café`, ExpectedOutput: `{"city":"Paris","t":21}`,
		ToolsCalled: called, ExpectedTools: tools}
	for _, r := range []struct{ kind, config string }{
		{"contains", `{"value":"café"}`},
		{"icontains", `{"value":"CAFÉ"}`},
		{"contains_all", `{"values":["Paris","Lyon"]}`},
		{"contains_any", `{"values":["Lyon","Paris"],"ignore_case":true}`},
		{"starts_with", `{"value":"{\"city\""}`},
		{"equals", `{}`},
		{"equals", `{"value":"x","trim":true}`},
		{"regex", `{"pattern":"\"t\":\\s*(\\d+)"}`},
		{"regex", `{"pattern":"(a","full_match":true}`},
		{"is_json", `{"required_keys":["city"]}`},
		{"json_correctness", `{"schema":{"type":"object","required":["city","t"]}}`},
		{"levenshtein", `{}`},
		{"levenshtein", `{"value":"café","strict_mode":true}`},
		{"tool_correctness", `{}`},
		{"tool_correctness", `{"evaluation_params":["input_parameters","output"],"should_consider_ordering":true}`},
		{"tool_correctness", `{"should_exact_match":true}`},
	} {
		req := &abi.MeasureRequest{Kind: r.kind, Metric: "m", Config: json.RawMessage(r.config), Threshold: 0.5, Case: c}
		got, err := wasm.Measure(ctx, svc, req)
		if err != nil {
			t.Fatalf("%s %s: wasm: %v", r.kind, r.config, err)
		}
		want, err := inproc.Measure(ctx, svc, req)
		if err != nil {
			t.Fatalf("%s %s: inproc: %v", r.kind, r.config, err)
		}
		// An error names the plugin's digest, which is the transport's.
		for _, res := range []*abi.MeasureResult{got, want} {
			if res.Error != nil {
				res.Error.Digest = ""
			}
		}
		if g, w := mustMarshal(t, got), mustMarshal(t, want); !bytes.Equal(g, w) {
			t.Errorf("%s %s:\nwasm   %s\ninproc %s", r.kind, r.config, g, w)
		} else if !strings.Contains(string(g), `"score"`) && got.Error == nil {
			t.Errorf("%s %s: neither score nor error: %s", r.kind, r.config, g)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
