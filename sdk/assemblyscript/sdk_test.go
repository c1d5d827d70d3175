// Tests of the AssemblyScript SDK through the real host: a probe module
// (testdata/probe) built from source with npm and asc, loaded by
// host.Evaluate. Skipped when node or npm is missing (scripts/ci-deps-as
// installs them).
package assemblyscript_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

var built sdktest.Once

func TestMain(m *testing.M) { sdktest.Main(m, &built) }

// probe builds testdata/probe once (probe-as.wasm and noembed-as.wasm, a
// module that judges and logs, never embeds) and returns the probe's path.
func probe(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the AssemblyScript SDK tests need %s (scripts/ci-deps-as installs node and npm): %v", tool, err)
		}
	}
	return filepath.Join(built.Dir(t, func(dir string) error {
		// npm ci copies the SDK as it is now (install-links), so every run
		// tests the working tree's SDK.
		for _, args := range [][]string{
			{"npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"},
			{"npx", "--no-install", "asc", "assembly/index.ts", "--config", "asconfig.json", "--target", "release", "--outFile", filepath.Join(dir, "probe-as.wasm")},
			{"npx", "--no-install", "asc", "assembly/noembed.ts", "--config", "asconfig.json", "--target", "release", "--outFile", filepath.Join(dir, "noembed-as.wasm")},
		} {
			if err := sdktest.Command("testdata/probe", nil, args...); err != nil {
				return err
			}
		}
		_, err := sdktest.WriteDigest(filepath.Join(dir, "probe-as.wasm"))
		return err
	}), "probe-as.wasm")
}

// run evaluates one probe kind (params as YAML flow) on cases; logs go to
// the returned buffer.
func run(t *testing.T, kind, params string, cases ...abi.TestCase) (map[string]host.MetricResult, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	out := sdktest.Evaluate(t, sdktest.Plugin{Name: "probe-as", Path: probe(t)}, sdktest.Metric{Kind: kind, Params: params,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, cases...)
	return out, &logs
}

// TestUTF8RoundTrip: text in every UTF-8 length, JSON escapes and control
// characters comes back byte for byte in reason and details (output sized in
// UTF-8 bytes, not UTF-16 units), and a config's numbers, nesting and
// escapes survive the SDK's JSON reader and writer.
func TestUTF8RoundTrip(t *testing.T) {
	texts := map[string]string{
		"ascii":   "plain",
		"latin":   "café naïve Größe",
		"cjk":     "東京タワー",
		"emoji":   "🙂👍🏽 flags 🇫🇷",
		"escapes": "quote \" backslash \\ slash / tab\tnl\ncr\r nul\x00 bell\x07 del\x7f",
		"long":    strings.Repeat("ü東🙂", 5000),
	}
	cfg := `{n: 3, neg: -0.5, big: 12345678901234, tiny: 1.5e-300, huge: 1e300, frac: 0.1, s: "é\u0001\"", ` +
		`nested: {a: [1, true, false, null, "x"], b: {}}, empty: []}`
	var cases []abi.TestCase
	for id, s := range texts {
		cases = append(cases, abi.TestCase{ID: id, ActualOutput: s})
	}
	res, _ := run(t, "echo", cfg, cases...)
	var wantCfg any
	json.Unmarshal([]byte(`{"n":3,"neg":-0.5,"big":12345678901234,"tiny":1.5e-300,"huge":1e300,"frac":0.1,"s":"é\u0001\"",`+
		`"nested":{"a":[1,true,false,null,"x"],"b":{}},"empty":[]}`), &wantCfg)
	for id, s := range texts {
		m := res[id]
		if m.Error != nil || m.Score == nil || *m.Score != 1 {
			t.Fatalf("%s: score %v error %v", id, m.Score, m.Error)
		}
		if m.Reason != "echo: "+s {
			t.Errorf("%s: reason %q, want %q", id, m.Reason, "echo: "+s)
		}
		var d struct {
			Text        string `json:"text"`
			Config      any    `json:"config"`
			UTF16Length int    `json:"utf16_length"`
		}
		if err := json.Unmarshal(m.Details, &d); err != nil {
			t.Fatal(err)
		}
		if d.Text != s {
			t.Errorf("%s: details.text %q", id, d.Text)
		}
		if want := len(utf16Units(s)); d.UTF16Length != want {
			t.Errorf("%s: utf16_length %d, want %d", id, d.UTF16Length, want)
		}
		if !reflect.DeepEqual(d.Config, wantCfg) {
			t.Errorf("%s: config echoed as %v\nwant %v", id, d.Config, wantCfg)
		}
	}
}

func utf16Units(s string) []uint16 {
	var u []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			u = append(u, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
		} else {
			u = append(u, uint16(r))
		}
	}
	return u
}

// TestAbortMessage: an AssemblyScript abort (here a failed assert) needs no
// env.abort import; it traps with the message and its source location set
// as the Extism error, and the next case runs on a fresh instance.
func TestAbortMessage(t *testing.T) {
	res, _ := run(t, "assert", "{}",
		abi.TestCase{ID: "bad", ActualOutput: "wrong ünïcode"},
		abi.TestCase{ID: "ok", ActualOutput: "fine"})
	bad := res["bad"]
	if bad.Error == nil || bad.Error.Code != abi.CodeTrap {
		t.Fatalf("bad: error %+v, want a trap", bad.Error)
	}
	for _, want := range []string{"probe assertion failed on wrong ünïcode", "assembly/index.ts"} {
		if !strings.Contains(bad.Error.Error(), want) {
			t.Errorf("bad: trap %q does not say %q", bad.Error.Error(), want)
		}
	}
	if ok := res["ok"]; ok.Error != nil || ok.Score == nil || *ok.Score != 1 {
		t.Errorf("ok: score %v error %v", ok.Score, ok.Error)
	}
}

// TestLogAndScoreGuard: log() reaches the host's log with its attributes;
// the SDK turns a score outside [0,1] into a metric error (not a trap), and
// answers a case lacking a required field with missing_field.
func TestLogAndScoreGuard(t *testing.T) {
	res, logs := run(t, "log", "{}", abi.TestCase{ID: "l1", ActualOutput: "héllo"})
	if m := res["l1"]; m.Error != nil || m.Reason != "logged" {
		t.Fatalf("log: %+v", m)
	}
	for _, want := range []string{"probe log: héllo", "case=l1", "level=WARN"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("host log lacks %q:\n%s", want, logs.String())
		}
	}

	res, _ = run(t, "bad_score", "{}", abi.TestCase{ID: "b", ActualOutput: "x"}, abi.TestCase{ID: "none", Input: "no output"})
	if m := res["b"]; m.Error == nil || m.Error.Code != abi.CodeMetric || !strings.Contains(m.Error.Message, "outside [0,1]") {
		t.Errorf("bad_score: %+v, want metric_error outside [0,1]", m.Error)
	}
	if m := res["none"]; m.Error == nil || m.Error.Code != abi.CodeMissingField || m.Error.Field != abi.FieldActualOutput {
		t.Errorf("no actual_output: %+v, want missing_field", m.Error)
	}
}
