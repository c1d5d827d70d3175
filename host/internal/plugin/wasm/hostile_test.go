package wasm

import (
	"context"
	"errors"
	"net"
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
	// A generous deadline, so a dying guest's slow traceback is not taken
	// for a hang on a loaded machine; the loop gets its own short one.
	limits := transport.Limits{Timeout: duration.Duration(20 * time.Second), MemoryPages: 512, MaxOutputBytes: 64 << 10, PoolSize: 1, MaxJudgeCalls: 2}
	short := limits
	short.Timeout = duration.Duration(300 * time.Millisecond)
	h := plugintest.Hostile[transport.Services]{ID: "hostile@0.0.1", Digest: plugintest.GuestDigest(t, "hostile"), StderrMax: transport.StderrKeep + 100,
		Plain:     guest(load(t, "hostile", transport.Options{Limits: limits})),
		Granted:   guest(load(t, "hostile", transport.Options{Limits: limits, Grants: transport.Grants{Judge: true}})),
		Impatient: guest(load(t, "hostile", transport.Options{Limits: short})),
	}

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

	// Every fault replaces the instance: its memory may be anything.
	plugintest.RunHostile(t, h, []plugintest.HostileCase{
		{Behaviour: "loop", Impatient: true, Code: abi.CodeTimeout, Replaced: true},
		{Behaviour: "membomb", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"out of memory"}},
		{Behaviour: "panic", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"hostile: deliberate panic in measure"}},
		{Behaviour: "nilderef", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"nil pointer dereference"}},
		{Behaviour: "stackoverflow", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"fatal error: "}}, // stack overflow, or OOM growing the stack
		{Behaviour: "exit0", Code: abi.CodeABI, Replaced: true},
		{Behaviour: "bigoutput", Cfg: map[string]any{"size": limits.MaxOutputBytes + 1}, Code: abi.CodeOutputTooLarge, Replaced: true},
		{Behaviour: "judge", ResCode: abi.CodeCapability},
		{Behaviour: "judge_many", Cfg: map[string]any{"calls": 3}, Granted: true, ResCode: abi.CodeBudget, Judged: 2},
		{Behaviour: "readfile", Check: func(t *testing.T, obs map[string]any) {
			if obs["file_error"] == "" || obs["file_bytes"] != "" || obs["dir_error"] == "" || obs["dir_entries"] != 0.0 {
				t.Errorf("guest reached the filesystem: %v", obs)
			}
		}},
		{Behaviour: "env", Check: func(t *testing.T, obs map[string]any) {
			if obs["HOME"] != "" || obs["PATH"] != "" || obs["OPENAI_API_KEY"] != "" {
				t.Errorf("guest read the host environment: %v", obs)
			}
			if env, _ := obs["environ"].([]any); len(env) != 0 {
				t.Errorf("guest environment is not empty: %v", env)
			}
		}},
		{Behaviour: "socket", Cfg: map[string]any{"addr": ln.Addr().String()}, Check: func(t *testing.T, obs map[string]any) {
			if obs["connected"] != false || obs["dial_error"] == "" {
				t.Errorf("guest opened a socket: %v", obs)
			}
		}},
		{Behaviour: "clock", Check: func(t *testing.T, obs map[string]any) {
			guestNow := time.Unix(0, int64(obs["unix_nano"].(float64)))
			if d := time.Since(guestNow); d < 24*time.Hour && d > -24*time.Hour {
				t.Errorf("guest sees the real clock: %s", guestNow)
			}
		}},
	})

	ln.Close()
	select {
	case <-accepted:
		t.Error("a guest connection reached the host's listener")
	default:
	}
}

// guest is p as plugintest's shared checks drive it.
func guest(p transport.Plugin) plugintest.Guest[transport.Services] {
	return plugintest.Guest[transport.Services]{Measure: p.Measure, Started: p.(*wasmPlugin).instances.Load}
}

// TestCallerCancel: a caller that gives up gets its context error, not a
// plugin fault, and the plugin keeps serving.
func TestCallerCancel(t *testing.T) {
	p := load(t, "hostile", transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{PoolSize: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	svc, done := plugintest.Hold(t, ctx, p.Measure, "c1", 2)
	cancel()
	// Unlike a process plugin's, the call returns only once the host's
	// judge does: the guest runs on the call's goroutine, now inside it.
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
