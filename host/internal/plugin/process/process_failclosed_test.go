package process

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// The process transport's side of the tests in failclosed_test.go:
// what a process plugin sends is read by the same code as what a Wasm
// guest sends (DecodeStrict, CompileSchema, the guard), and these tests
// check it is reached from this transport too.

// TestProcessDescriptorRules: a process's descriptor is refused for a
// duplicate key, and for config schemas that refer outside themselves,
// without the host opening any of them.
func TestProcessDescriptorRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"dupdesc", []string{`duplicate key "name" at /name`}},
		{"refschema", []string{
			`kinds[0] "reffile": config_schema: `, `reference to "file:///etc/passwd" outside the schema`,
			`kinds[1] "refstdin": config_schema: `, `reference to "file:///dev/stdin" outside the schema`,
			`kinds[2] "refhttp": config_schema: `, `reference to "http://127.0.0.1:9/schema.json" outside the schema`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(context.Background(), plugintest.NativePath(tc.name), plugintest.NativeDigest(t), transport.Options{}, nil)
			if err == nil {
				p.Close(context.Background())
				t.Fatalf("loaded %s", p.Info().ID())
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != abi.CodeABI {
				t.Fatalf("want abi_violation, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ae.Message, w) {
					t.Errorf("error lacks %q:\n%s", w, ae.Message)
				}
			}
		})
	}
}

// TestProcessGuard: judge calls and log records from a process go through
// the same guard as a Wasm guest's — capability asked and granted, a
// first batch checked against the token budget before it is sent, logs
// bounded — and the host owns the fields it owns.
func TestProcessGuard(t *testing.T) {
	ctx := context.Background()
	granted := transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{MaxJudgeTokens: 1000, MaxLogRecords: 10}}
	hostile := loadProcess(t, "hostile", granted)
	unasked := loadProcess(t, "unasked", granted)
	digest := plugintest.NativeDigest(t)
	for _, tc := range []struct {
		name   string
		p      transport.Plugin
		cfg    map[string]any
		code   abi.Code // result error, or "" for a result
		want   string
		judged int64
		logs   int // records that reached the host, the summary included
	}{
		{name: "granted, not asked", p: unasked, cfg: map[string]any{"behaviour": "judge"},
			code: abi.CodeCapability, want: "granted but the plugin's descriptor does not ask for it"},
		{name: "over-budget first batch", p: hostile, cfg: map[string]any{"behaviour": "judge_big", "size": 40_000},
			code: abi.CodeBudget, want: "requests[0] alone may spend ~10"},
		// judge_big returns no result after a successful call.
		{name: "within budget", p: hostile, cfg: map[string]any{"behaviour": "judge_big", "size": 400},
			code: abi.CodeMetric, want: "returned no result", judged: 1},
		{name: "forged error", p: hostile, cfg: map[string]any{"behaviour": "forge"},
			code: abi.CodeMetric, want: "forged"},
		{name: "log flood", p: hostile, cfg: map[string]any{"behaviour": "logflood", "calls": 200, "size": 10},
			logs: 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &plugintest.FakeServices{TokensPerCall: 10}
			res, err := tc.p.Measure(ctx, svc, plugintest.HostileRequest(tc.name, tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if tc.code == "" {
				if res.Error != nil {
					t.Fatalf("want a result, got %s", plugintest.MustJSON(t, res))
				}
			} else {
				e := res.Error
				if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.want) {
					t.Fatalf("want %s %q, got %s", tc.code, tc.want, plugintest.MustJSON(t, res))
				}
				if e.Plugin != tc.p.Info().ID() || e.Digest != digest || e.Stderr != "" || e.Retryable {
					t.Errorf("host-owned fields are not the host's: %+v", e)
				}
			}
			if n := svc.Calls.Load(); n != tc.judged {
				t.Errorf("%d judge requests sent, want %d", n, tc.judged)
			}
			svc.Mu.Lock()
			defer svc.Mu.Unlock()
			if len(svc.Logs) != tc.logs {
				t.Fatalf("%d log records reached the host, want %d", len(svc.Logs), tc.logs)
			}
			if tc.logs > 0 {
				sum := svc.Logs[tc.logs-1]
				if sum.Attrs["dropped_records"] != 190 || !strings.Contains(sum.Message, "more than max_log_records 10") {
					t.Errorf("summary %+v", sum)
				}
			}
		})
	}
}

// TestProcessOutputBounded: a result far over max_output_bytes is refused
// by the transport before it is read whole.
func TestProcessOutputBounded(t *testing.T) {
	p := loadProcess(t, "hostile", transport.Options{Limits: transport.Limits{MaxOutputBytes: 64 << 10}})
	var err error
	n := plugintest.Allocated(func() {
		_, err = p.Measure(context.Background(), nil, plugintest.HostileRequest("big", map[string]any{"behaviour": "bigoutput", "size": 48 << 20}))
	})
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeOutputTooLarge {
		t.Fatalf("want output_too_large, got %v", err)
	}
	if n > 8<<20 {
		t.Errorf("the host allocated %d bytes refusing a 48 MiB result", n)
	}
}
