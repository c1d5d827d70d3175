package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestHostileContained runs every misbehaviour of the hostile guest and
// requires the right typed error, a replaced instance after a fault, a
// kept instance after a metric error, and a healthy next call either way.
func TestHostileContained(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", plugintest.FakeSecret)
	t.Setenv("HOME", "/home/"+plugintest.FakeSecret)
	ctx := context.Background()
	// A generous deadline, so a dying guest's slow traceback is not taken
	// for a hang on a loaded machine; the loop gets its own short one.
	limits := transport.Limits{Timeout: duration.Duration(20 * time.Second), MemoryPages: 512, MaxOutputBytes: 64 << 10, PoolSize: 1, MaxJudgeCalls: 2}
	ungranted := load(t, "hostile", transport.Options{Limits: limits})
	granted := load(t, "hostile", transport.Options{Limits: limits, Grants: transport.Grants{Judge: true}})
	short := limits
	short.Timeout = duration.Duration(300 * time.Millisecond)
	impatient := load(t, "hostile", transport.Options{Limits: short})
	digest := plugintest.GuestDigest(t, "hostile")

	// A listener the guest is told to dial: nothing may ever reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()

	var outputs []string // everything a guest produced, searched for the secret
	type check func(t *testing.T, res *abi.MeasureResult, obs map[string]any)
	cases := []struct {
		behaviour string
		cfg       map[string]any
		granted   bool
		impatient bool
		code      abi.Code // invocation error (instance replaced), or
		resCode   abi.Code // error inside the result (instance kept), or neither
		stderr    string   // in the error's captured stderr
		judged    int64    // judge requests that reached Services
		check     check
	}{
		{behaviour: "loop", impatient: true, code: abi.CodeTimeout},
		{behaviour: "membomb", code: abi.CodeTrap, stderr: "out of memory"},
		{behaviour: "panic", code: abi.CodeTrap, stderr: "hostile: deliberate panic in measure"},
		{behaviour: "nilderef", code: abi.CodeTrap, stderr: "nil pointer dereference"},
		{behaviour: "stackoverflow", code: abi.CodeTrap, stderr: "fatal error: "}, // stack overflow, or OOM growing the stack
		{behaviour: "exit0", code: abi.CodeABI},
		{behaviour: "bigoutput", cfg: map[string]any{"size": limits.MaxOutputBytes + 1}, code: abi.CodeOutputTooLarge},
		{behaviour: "judge", resCode: abi.CodeCapability},
		{behaviour: "judge_many", cfg: map[string]any{"calls": 3}, granted: true, resCode: abi.CodeBudget, judged: 2},
		{behaviour: "readfile", check: func(t *testing.T, _ *abi.MeasureResult, obs map[string]any) {
			if obs["file_error"] == "" || obs["file_bytes"] != "" || obs["dir_error"] == "" || obs["dir_entries"] != 0.0 {
				t.Errorf("guest reached the filesystem: %v", obs)
			}
		}},
		{behaviour: "env", check: func(t *testing.T, _ *abi.MeasureResult, obs map[string]any) {
			if obs["HOME"] != "" || obs["PATH"] != "" || obs["OPENAI_API_KEY"] != "" {
				t.Errorf("guest read the host environment: %v", obs)
			}
			if env, _ := obs["environ"].([]any); len(env) != 0 {
				t.Errorf("guest environment is not empty: %v", env)
			}
		}},
		{behaviour: "socket", cfg: map[string]any{"addr": ln.Addr().String()}, check: func(t *testing.T, _ *abi.MeasureResult, obs map[string]any) {
			if obs["connected"] != false || obs["dial_error"] == "" {
				t.Errorf("guest opened a socket: %v", obs)
			}
		}},
		{behaviour: "clock", check: func(t *testing.T, _ *abi.MeasureResult, obs map[string]any) {
			guestNow := time.Unix(0, int64(obs["unix_nano"].(float64)))
			if d := time.Since(guestNow); d < 24*time.Hour && d > -24*time.Hour {
				t.Errorf("guest sees the real clock: %s", guestNow)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.behaviour, func(t *testing.T) {
			p, svc := ungranted, &plugintest.FakeServices{TokensPerCall: 10}
			switch {
			case c.granted:
				p = granted
			case c.impatient:
				p = impatient
			}
			w := p.(*wasmPlugin)
			cfg := map[string]any{"behaviour": c.behaviour}
			for k, v := range c.cfg {
				cfg[k] = v
			}
			before := w.instances.Load()
			res, err := p.Measure(ctx, svc, plugintest.HostileRequest(c.behaviour, cfg))
			if err != nil {
				outputs = append(outputs, err.Error())
			}
			if res != nil {
				outputs = append(outputs, plugintest.MustJSON(t, res))
			}
			switch {
			case c.code != "":
				var ae *abi.Error
				if !errors.As(err, &ae) || ae.Code != c.code {
					t.Fatalf("want %s error, got %v (result %s)", c.code, err, plugintest.MustJSON(t, res))
				}
				if ae.Plugin != "hostile@0.0.1" || ae.Digest != digest {
					t.Errorf("error names %s / %s, want hostile@0.0.1 / %s", ae.Plugin, ae.Digest, digest)
				}
				if msg := err.Error(); !strings.Contains(msg, "plugin hostile@0.0.1@"+digest[:19]) || !strings.Contains(msg, `case "`+c.behaviour+`"`) {
					t.Errorf("message does not say which plugin and case: %s", msg)
				}
				if !strings.Contains(ae.Stderr, c.stderr) {
					t.Errorf("stderr lacks %q:\n%s", c.stderr, ae.Stderr)
				}
			case c.resCode != "":
				if err != nil || res.Error == nil || res.Error.Code != c.resCode {
					t.Fatalf("want result error %s, got %v / %s", c.resCode, err, plugintest.MustJSON(t, res))
				}
				if res.Error.Plugin != "hostile@0.0.1" || res.Error.Digest != digest {
					t.Errorf("result error names %s / %s", res.Error.Plugin, res.Error.Digest)
				}
			default:
				if err != nil || res.Error != nil {
					t.Fatalf("want a result, got %v / %s", err, plugintest.MustJSON(t, res))
				}
				var obs map[string]any
				if err := json.Unmarshal(res.Details, &obs); err != nil {
					t.Fatal(err)
				}
				c.check(t, res, obs)
			}
			if got := svc.Calls.Load(); got != c.judged {
				t.Errorf("%d judge requests reached the host services, want %d", got, c.judged)
			}

			// The next call on the same plugin is served: by a fresh
			// instance after a fault, by the same one otherwise.
			res, err = p.Measure(ctx, svc, plugintest.HostileRequest("next", map[string]any{"behaviour": "echo"}))
			if err != nil || res.Error != nil || res.Reason != "next|in-next" {
				t.Fatalf("plugin does not serve after %s: %v / %s", c.behaviour, err, plugintest.MustJSON(t, res))
			}
			created := w.instances.Load() - before
			if c.code != "" && created != 1 {
				t.Errorf("%d instances created after a %s, want 1 (the faulty one replaced)", created, c.code)
			}
			if c.code == "" && created != 0 {
				t.Errorf("%d instances created after a healthy call, want 0 (instance reused)", created)
			}
		})
	}

	ln.Close()
	select {
	case <-accepted:
		t.Error("a guest connection reached the host's listener")
	default:
	}
	for _, o := range outputs {
		if strings.Contains(o, plugintest.FakeSecret) {
			t.Fatalf("the host's secret leaked into guest output: %s", o)
		}
	}
}

// TestGuestLogReachesServices checks anvil_log end to end, attributed.
func TestGuestLogReachesServices(t *testing.T) {
	p := load(t, "hostile", transport.Options{})
	svc := &plugintest.FakeServices{}
	res, err := p.Measure(context.Background(), svc, plugintest.HostileRequest("l1", map[string]any{"behaviour": "log"}))
	if err != nil || res.Error != nil {
		t.Fatalf("%v / %s", err, plugintest.MustJSON(t, res))
	}
	if len(svc.Logs) != 1 {
		t.Fatalf("want 1 log record, got %v", svc.Logs)
	}
	rec, id := svc.Logs[0], svc.LogIDs[0]
	if id != "hostile@0.0.1" || rec.Level != "warn" || rec.Message != "hostile says hello" || rec.Attrs["case"] != "l1" || rec.Attrs["n"] != 3.0 {
		t.Errorf("got %s %+v", id, rec)
	}
}

// TestCallerCancel: a caller that gives up gets its context error, not a
// plugin fault, and the plugin keeps serving.
func TestCallerCancel(t *testing.T) {
	p := load(t, "hostile", transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{PoolSize: 1}})
	svc := plugintest.NewBlockingServices()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Measure(ctx, svc, plugintest.HostileRequest("c1", map[string]any{"behaviour": "judge_many", "calls": 2}))
		done <- err
	}()
	<-svc.Entered // the guest is inside the host's judge call
	cancel()
	close(svc.Release)
	err := <-done
	var ae *abi.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &ae) {
		t.Fatalf("want the caller's context.Canceled, got %v", err)
	}
	res, err := p.Measure(context.Background(), nil, plugintest.HostileRequest("c2", map[string]any{"behaviour": "echo"}))
	if err != nil || res.Reason != "c2|in-c2" {
		t.Fatalf("plugin does not serve after a cancelled call: %v", err)
	}
}
