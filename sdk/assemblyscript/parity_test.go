package assemblyscript_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

// TestParity: the probe passes the SDKs' parity suite (sdktest.RunParity)
// through the real host. Its other kinds break the ABI on purpose (a
// trap, a score of 1.5), so only the kinds the suite runs are held to
// the conformance kit.
func TestParity(t *testing.T) {
	path := probe(t)
	sdktest.RunParity(t, sdktest.Probe{
		Plugin:       sdktest.Plugin{Name: "probe-as", Path: path},
		Cosine:       "cosine",
		Turns:        "turns",
		Presence:     "presence",
		RendersTurns: true,
		NoEmbed:      filepath.Join(filepath.Dir(path), "noembed-as.wasm"),
		Conforming:   []string{"cosine", "turns", "presence"},
	})
}

// TestEmbedResultChecked: EmbedResult.fromJSON on the answers a real host
// never sends — a wrong count, ragged, empty or non-numeric vectors — is
// an abi_violation saying what is wrong, with no vectors; the host's
// error keeps its code; a good answer's vectors and usage are read.
func TestEmbedResultChecked(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		n            int
		want         string // details
	}{
		{"ok", `{"vectors":[[1,-0.5],[0,2e3]],"usage":{"calls":1}}`, 2, `{"vectors":[[1,-0.5],[0,2000]],"calls":1}`},
		{"host error", `{"vectors":[],"usage":{},"error":{"code":"budget_exhausted","message":"no budget"}}`, 2,
			`{"error":"budget_exhausted: no budget","vectors":[],"calls":0}`},
		{"too few", `{"vectors":[[1]],"usage":{}}`, 2, `{"error":"abi_violation: the host answered 1 vectors for 2 texts","vectors":[],"calls":0}`},
		{"too many", `{"vectors":[[1],[2],[3]],"usage":{}}`, 2, `{"error":"abi_violation: the host answered 3 vectors for 2 texts","vectors":[],"calls":0}`},
		{"no vectors", `{"usage":{}}`, 1, `{"error":"abi_violation: the host answered no vectors for 1 texts","vectors":[],"calls":0}`},
		{"ragged", `{"vectors":[[1,2],[3]]}`, 2, `{"error":"abi_violation: vectors[1] has 1 numbers, vectors[0] 2","vectors":[],"calls":0}`},
		{"longer", `{"vectors":[[1],[2,3]]}`, 2, `{"error":"abi_violation: vectors[1] has 2 numbers, vectors[0] 1","vectors":[],"calls":0}`},
		{"empty", `{"vectors":[[]]}`, 1, `{"error":"abi_violation: vectors[0] is not a non-empty array of numbers","vectors":[],"calls":0}`},
		{"not a number", `{"vectors":[[1,"2"]]}`, 1, `{"error":"abi_violation: vectors[0][1] is not a number","vectors":[],"calls":0}`},
		{"error not an object", `{"vectors":[],"error":"no"}`, 1, `{"error":"abi_violation: embed result: error is not an object","vectors":[],"calls":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := json.Marshal(map[string]any{"result": tc.result, "n": tc.n})
			m, _ := run(t, "decode_embed", string(cfg), abi.TestCase{ID: "c", ActualOutput: "x"})
			r := m["c"]
			var got, want any
			json.Unmarshal(r.Details, &got)
			json.Unmarshal([]byte(tc.want), &want)
			if r.Error != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("details %s error %v; want %s", r.Details, r.Error, tc.want)
			}
		})
	}
}
