package wasm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestGuestBlocksBounded: the blocks a guest hands the host through Extism
// — its output, its error message, the argument of Extism's own log and
// config functions — are refused by size before the host copies them.
// The guest's Extism memory is grown beforehand (kind "grow", on the same
// instance), so what is measured is the host's copying, not the guest's
// memory growing.
func TestGuestBlocksBounded(t *testing.T) {
	ctx := context.Background()
	const maxOut = 64 << 10
	p := load(t, "garbage", transport.Options{Limits: transport.Limits{PoolSize: 1, MaxOutputBytes: maxOut}})
	measure := func(kind string) (*abi.MeasureResult, error) {
		return p.Measure(ctx, nil, &abi.MeasureRequest{Kind: kind, Case: abi.TestCase{ID: kind}})
	}
	for _, tc := range []struct {
		kind string
		code abi.Code
		want string
	}{
		{"hugeoutput", abi.CodeOutputTooLarge, "anvil_measure: output is 50331648 bytes, max_output_bytes is 65536"},
		{"hugeerror", abi.CodeOutputTooLarge, "anvil_measure: error message is 50331648 bytes, max_output_bytes is 65536"},
		{"hugelog", abi.CodeOutputTooLarge, "the argument of extism:host/env.log_info is 50331648 bytes"},
		{"hugeconfig", abi.CodeOutputTooLarge, "the argument of extism:host/env.config_get is 50331648 bytes"},
		{"http", abi.CodeTrap, "extism:host/env.http_request: the sandbox has no network"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if _, err := measure("grow"); err != nil {
				t.Fatal(err)
			}
			var err error
			n := plugintest.Allocated(func() { _, err = measure(tc.kind) })
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.code || !strings.Contains(ae.Message, tc.want) || ae.Plugin != "garbage@1.0.0" {
				t.Fatalf("want %s %q from garbage@1.0.0, got %v", tc.code, tc.want, err)
			}
			if n > 8<<20 {
				t.Errorf("the host allocated %d bytes refusing a 48 MiB block; want it bounded by max_output_bytes (%d), not by the block", n, maxOut)
			}
			if res, err := measure("ok"); err != nil || *res.Score != 1 {
				t.Fatalf("not served after %s: %v", tc.kind, err)
			}
		})
	}
}

// TestDuplicateKeysRefused: a key written twice in a guest's output is an
// ABI violation naming the key, wherever it is — here in a descriptor; the
// results are in TestGarbageResults, the batches in TestJudgeBatchRules,
// the log records in TestGuestLogBounded.
func TestDuplicateKeysRefused(t *testing.T) {
	p, err := testRT.Load(context.Background(), plugintest.GuestPath("dupdesc"), plugintest.GuestDigest(t, "dupdesc"), transport.Options{})
	if err == nil {
		p.Close(context.Background())
		t.Fatalf("loaded a plugin whose descriptor names it twice, as %q", p.Info().ID())
	}
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeABI || !strings.Contains(ae.Message, `duplicate key "name" at /name`) {
		t.Fatalf("want abi_violation naming the key, got %v", err)
	}
}

// TestJudgeBatchRules: a judge batch is guest output too; a duplicate key
// or an out-of-range number refuses the batch before anything is sent.
func TestJudgeBatchRules(t *testing.T) {
	ctx := context.Background()
	p := load(t, "garbage", transport.Options{Grants: transport.Grants{Judge: true}})
	for _, tc := range []struct{ kind, want string }{
		{"dupjudge", `judge batch: duplicate key "requests" at /requests`},
		{"judgerange", "judge batch: requests[0].temperature is 7; want [0,2]"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			svc := &plugintest.FakeServices{}
			res, err := p.Measure(ctx, svc, &abi.MeasureRequest{Kind: tc.kind, Case: abi.TestCase{ID: tc.kind}})
			if err != nil {
				t.Fatal(err)
			}
			var batch abi.JudgeBatchResult
			if err := json.Unmarshal(res.Details, &batch); err != nil {
				t.Fatal(err)
			}
			if e := batch.Error; e == nil || e.Code != abi.CodeABI || !strings.Contains(e.Message, tc.want) || len(batch.Responses) != 0 {
				t.Errorf("want abi_violation %q, got %s", tc.want, res.Details)
			}
			if n := svc.Calls.Load(); n != 0 {
				t.Errorf("%d judge requests sent", n)
			}
		})
	}
}

// TestJudgeNeedsAskAndGrant: the judge is reachable only when the
// descriptor asks for it and the operator grants it.
func TestJudgeNeedsAskAndGrant(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		guest   string
		granted bool
		want    string // "" = answered
	}{
		{"asked and granted", "judge", true, ""},
		{"asked, not granted", "judge", false, "is not granted to this plugin"},
		{"granted, not asked", "unasked", true, "granted but the plugin's descriptor does not ask for it"},
		{"neither", "unasked", false, "is not granted to this plugin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, tc.guest, transport.Options{Grants: transport.Grants{Judge: tc.granted}})
			svc := &plugintest.FakeServices{}
			cfg, _ := json.Marshal(map[string]any{"prompts": []string{"hi"}})
			res, err := p.Measure(ctx, svc, &abi.MeasureRequest{Kind: "ask", Metric: "m", Config: cfg, Case: abi.TestCase{ID: "c", Input: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			var e *abi.Error
			if tc.guest == "unasked" {
				var batch abi.JudgeBatchResult
				if err := json.Unmarshal(res.Details, &batch); err != nil {
					t.Fatal(err)
				}
				e = batch.Error
			} else {
				e = res.Error
			}
			if tc.want == "" {
				if e != nil || svc.Calls.Load() != 1 {
					t.Fatalf("want one judged request, got %v (%d sent)", e, svc.Calls.Load())
				}
				return
			}
			if e == nil || e.Code != abi.CodeCapability || !strings.Contains(e.Message, tc.want) {
				t.Errorf("want capability_denied %q, got %v", tc.want, e)
			}
			if n := svc.Calls.Load(); n != 0 {
				t.Errorf("%d judge requests sent", n)
			}
		})
	}
}

// TestGuestLogBounded: anvil_log keeps at most max_log_records records
// and max_log_bytes bytes per invocation; the excess, and malformed
// records, are dropped and reported in one closing record.
func TestGuestLogBounded(t *testing.T) {
	ctx := context.Background()
	hostile := load(t, "hostile", transport.Options{Limits: transport.Limits{MaxLogRecords: 10, MaxLogBytes: 4 << 10}})
	garbage := load(t, "garbage", transport.Options{})
	for _, tc := range []struct {
		name    string
		p       transport.Plugin
		req     *abi.MeasureRequest
		kept    int
		dropped int
		why     string
	}{
		{"records", hostile, plugintest.HostileRequest("f1", map[string]any{"behaviour": "logflood", "calls": 500, "size": 10}), 10, 490, "more than max_log_records 10"},
		{"bytes", hostile, plugintest.HostileRequest("f2", map[string]any{"behaviour": "logflood", "calls": 5, "size": 1500}), 2, 3, "more than max_log_bytes 4096"},
		{"duplicate key", garbage, &abi.MeasureRequest{Kind: "duplog", Case: abi.TestCase{ID: "d"}}, 1, 1, `duplicate key "message" at /message`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &plugintest.FakeServices{}
			res, err := tc.p.Measure(ctx, svc, tc.req)
			if err != nil || res.Error != nil {
				t.Fatalf("%v / %s", err, plugintest.MustJSON(t, res))
			}
			if len(svc.Logs) != tc.kept+1 {
				t.Fatalf("%d records reached the host, want %d kept + 1 summary", len(svc.Logs), tc.kept)
			}
			for _, rec := range svc.Logs[:tc.kept] {
				if rec.Message == "second" {
					t.Errorf("a record with a duplicate key was logged: %+v", rec)
				}
			}
			sum := svc.Logs[tc.kept]
			if sum.Level != "warn" || !strings.Contains(sum.Message, tc.why) || sum.Attrs["dropped_records"] != tc.dropped {
				t.Errorf("summary %+v, want %d dropped because %q", sum, tc.dropped, tc.why)
			}
		})
	}
}

// TestHostOwnedFields: what a guest writes into the fields of an error
// the host owns is replaced: plugin and digest are this plugin's, stderr
// is only what the host captured, retryable is the host's to say.
func TestHostOwnedFields(t *testing.T) {
	p := load(t, "hostile", transport.Options{})
	res, err := p.Measure(context.Background(), nil, plugintest.HostileRequest("f", map[string]any{"behaviour": "forge"}))
	if err != nil {
		t.Fatal(err)
	}
	e := res.Error
	if e == nil || e.Message != "forged" {
		t.Fatalf("want the forged error, got %s", plugintest.MustJSON(t, res))
	}
	if e.Plugin != "hostile@0.0.1" || e.Digest != plugintest.GuestDigest(t, "hostile") || e.Stderr != "" || e.Retryable {
		t.Errorf("host-owned fields kept the guest's values: %+v", e)
	}
}

// TestModuleFileBounded: the module file is sized before it is read, and
// only a regular file is read at all.
func TestModuleFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("\x00asm\x01\x00\x00\x00"))
	if err := f.Truncate(transport.Limits{}.WithDefaults().MaxModuleBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct{ name, path, want string }{
		{"too big", big, "over max_module_bytes 67108864"},
		{"endless device", "/dev/zero", "is not a regular file"},
		{"directory", dir, "is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := plugintest.Allocated(func() { _, err = testRT.Load(context.Background(), tc.path, digest, transport.Options{}) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if n > 1<<20 {
				t.Errorf("refusing the file allocated %d bytes", n)
			}
		})
	}
}

// TestPathologicalModules: modules built to make compilation expensive are
// refused with a clear error, before or during compilation, without the
// host allocating what they declare.
func TestPathologicalModules(t *testing.T) {
	emptyBody := []byte{0, 0x0b} // no locals; end
	seqBlocks := func(n int) []byte {
		b := []byte{0}
		for range n {
			b = append(b, 0x02, 0x40, 0x0b) // block; end
		}
		return append(b, 0x0b)
	}
	for _, tc := range []struct {
		name  string
		mod   []byte
		opts  transport.Options
		want  string
		alloc uint64 // bytes the refusal may allocate beyond the module
	}{
		{"four billion locals", testModule(1, append([]byte{1}, append(uleb(0xffff_ffff), 0x7f, 0x0b)...), nil),
			transport.Options{}, "function body 0 declares more than 50000 locals", 1 << 20},
		{"locals past the limit", testModule(1, append([]byte{1}, append(uleb(50_001), 0x7f, 0x0b)...), nil),
			transport.Options{}, "function body 0 declares more than 50000 locals", 1 << 20},
		{"a million functions", testModule(1_000_000, emptyBody, nil),
			transport.Options{}, "1000000 functions (0 imported), over the limit of 100000", 1 << 20},
		{"a giant function", testModule(1, seqBlocks(100_000), nil),
			transport.Options{}, "function body 0 is 300002 bytes, over the limit of 262144", 1 << 20},
		{"a giant table", testModule(1, emptyBody, testSection(4, append([]byte{1, 0x70, 0}, uleb(10_000_001)...))), // funcref, no max
			transport.Options{}, "table 0 declares 10000001 elements, over the limit of 10000000", 1 << 20},
		{"a giant memory minimum", testModule(1, emptyBody, testSection(5, append([]byte{1, 0}, uleb(65536)...))), // pages, no max
			transport.Options{}, "4294967296 bytes of memory (65536 pages) and 0 bytes of tables, over the memory budget of 67108864 bytes", 16 << 20},
		// ~40 s of compiling in 2 000 functions of ~20 ms each: refused at
		// the deadline, and the abandoned compilation stops within one
		// function, so it does not run on into the next tests.
		{"slow to compile", testModule(2000, seqBlocks(1000), nil),
			transport.Options{Limits: transport.Limits{CompileTimeout: duration.Duration(100 * time.Millisecond)}},
			"not finished within compile_timeout 100ms; the module is refused", 256 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.wasm")
			if err := os.WriteFile(path, tc.mod, 0o644); err != nil {
				t.Fatal(err)
			}
			digest := transport.DigestOf(tc.mod)
			var err error
			n := plugintest.Allocated(func() { _, err = testRT.Load(context.Background(), path, digest, tc.opts) })
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != abi.CodeABI || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("want abi_violation %q, got %v", tc.want, err)
			}
			if ae.Plugin != path || ae.Digest != digest {
				t.Errorf("error names %s@%s, want the path and digest", ae.Plugin, ae.Digest)
			}
			if limit := uint64(len(tc.mod)) + tc.alloc; n > limit {
				t.Errorf("refusing a %d-byte module allocated %d bytes, want at most %d", len(tc.mod), n, limit)
			}
		})
	}
}

// testModule assembles a module of n functions of type () -> (), each
// with body (its locals and code), exporting the first as the ABI marker
// and as anvil_describe, and with the extra sections given (testSection),
// placed after the function section.
func testModule(n int, body, extra []byte) []byte {
	section := testSection
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, []byte{1, 0x60, 0, 0})...)
	funcs := uleb(uint64(n))
	for range n {
		funcs = append(funcs, 0)
	}
	m = append(m, section(3, funcs)...)
	m = append(m, extra...)
	exports := []byte{2}
	for _, name := range []string{"anvil_abi_v1", "anvil_describe"} {
		exports = append(append(append(exports, byte(len(name))), name...), 0, 0)
	}
	m = append(m, section(7, exports)...)
	one := append(uleb(uint64(len(body))), body...)
	code := uleb(uint64(n))
	for range n {
		code = append(code, one...)
	}
	return append(m, section(10, code)...)
}

// testSection is a module section: id, size, contents.
func testSection(id byte, contents []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(contents)))...), contents...)
}

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }
