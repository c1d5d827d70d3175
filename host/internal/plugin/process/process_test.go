package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/testknobs"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

const hostileID = "hostile@0.0.2"

func echoRequest(id string) *abi.MeasureRequest {
	return plugintest.HostileRequest(id, map[string]any{"behaviour": "echo"})
}

// mustEcho requires the plugin to serve an honest call.
func mustEcho(t *testing.T, p transport.Plugin, id string) {
	t.Helper()
	res, err := p.Measure(context.Background(), nil, echoRequest(id))
	if err != nil || res.Error != nil || res.Reason != id+"|in-"+id {
		t.Fatalf("plugin does not serve: %v / %s", err, plugintest.MustJSON(t, res))
	}
}

// TestProcessHostileContained runs each misbehaviour of the native
// hostile guest: the right typed error naming plugin and digest, a killed
// and restarted process after a crash or a timeout, a kept process
// otherwise, and a healthy next call either way.
func TestProcessHostileContained(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", plugintest.FakeSecret)
	t.Setenv("HOME", "/home/"+plugintest.FakeSecret)
	limits := transport.Limits{Timeout: duration.Duration(20 * time.Second), MaxOutputBytes: 64 << 10, MaxJudgeCalls: 2}
	short := limits
	short.Timeout = duration.Duration(300 * time.Millisecond)
	h := plugintest.Hostile[transport.Services]{ID: hostileID, Digest: plugintest.NativeDigest(t), StderrMax: transport.StderrKeep + 100,
		Plain:     guest(loadProcess(t, "hostile", transport.Options{Limits: limits})),
		Granted:   guest(loadProcess(t, "hostile", transport.Options{Limits: limits, Grants: transport.Grants{Judge: true}})),
		Impatient: guest(loadProcess(t, "hostile", transport.Options{Limits: short})),
	}
	// A crash or a timeout replaces the process; an output too large is
	// refused by a process that lives on.
	plugintest.RunHostile(t, h, []plugintest.HostileCase{
		{Behaviour: "panic", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"panic: hostile: deliberate panic in measure", "goroutine "}},
		{Behaviour: "exit", Code: abi.CodeTrap, Replaced: true},
		{Behaviour: "stderrspam", Code: abi.CodeTrap, Replaced: true, Stderr: []string{"hostile: spam begins", "bytes dropped", "panic: hostile: panic after spamming stderr"}},
		{Behaviour: "hang", Impatient: true, Code: abi.CodeTimeout, Replaced: true},
		{Behaviour: "bigoutput", Cfg: map[string]any{"size": limits.MaxOutputBytes + 1}, Code: abi.CodeOutputTooLarge},
		{Behaviour: "bigoutput", Cfg: map[string]any{"size": 8 << 20}, Code: abi.CodeOutputTooLarge},
		{Behaviour: "judge", ResCode: abi.CodeCapability},
		{Behaviour: "judge_many", Cfg: map[string]any{"calls": 3}, Granted: true, ResCode: abi.CodeBudget, Judged: 2},
		{Behaviour: "judge_big", Cfg: map[string]any{"size": limits.MaxOutputBytes + 1}, Granted: true, ResCode: abi.CodeOutputTooLarge},
		{Behaviour: "judge_big", Cfg: map[string]any{"size": 4 << 20}, Granted: true, ResCode: abi.CodeOutputTooLarge},
		{Behaviour: "env", Check: func(t *testing.T, obs map[string]any) {
			if obs["HOME"] != "" || obs["PATH"] != "" || obs["OPENAI_API_KEY"] != "" {
				t.Errorf("guest read the host environment: %v", obs)
			}
			env, _ := obs["environ"].([]any)
			for _, kv := range env {
				name, _, _ := strings.Cut(kv.(string), "=")
				switch name {
				case "ANVIL_PLUGIN", "PLUGIN_MIN_PORT", "PLUGIN_MAX_PORT", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_UNIX_SOCKET_DIR",
					"PLUGIN_UNIX_SOCKET_GROUP": // under a root host: the plugin runs as nobody
				default:
					t.Errorf("guest environment has %q beyond go-plugin's handshake", kv)
				}
			}
			if len(env) == 0 {
				t.Errorf("guest environment lacks even the handshake cookie: %v", obs)
			}
			if obs["stdin_is_devnull"] != true {
				t.Errorf("guest stdin is not /dev/null: %v", obs)
			}
			if obs["wd"] != plugintest.NativeDir() {
				t.Errorf("guest working directory %v, want the binary's %s", obs["wd"], plugintest.NativeDir())
			}
		}},
	})
}

// guest is p as plugintest's shared checks drive it.
func guest(p transport.Plugin) plugintest.Guest[transport.Services] {
	return plugintest.Guest[transport.Services]{Measure: p.Measure, Started: p.(*processPlugin).starts.Load}
}

// TestProcessServesConcurrently: one process holds several calls at once
// (the guest's barrier opens only when all are inside).
func TestProcessServesConcurrently(t *testing.T) {
	p := loadProcess(t, "hostile", transport.Options{Limits: transport.Limits{Timeout: duration.Duration(30 * time.Second)}})
	const n = 6
	svc := &plugintest.FakeServices{}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("b%d", i)
			res, err := p.Measure(context.Background(), svc, plugintest.HostileRequest(id, map[string]any{"behaviour": "barrier", "n": n, "key": t.Name()}))
			if err == nil && (res.Error != nil || res.Reason != id+"|in-"+id) {
				err = fmt.Errorf("result %s", plugintest.MustJSON(t, res))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := p.(*processPlugin).starts.Load(); got != 1 {
		t.Errorf("%d processes started, want 1", got)
	}
	if len(svc.Logs) != n {
		t.Errorf("%d log records, want %d", len(svc.Logs), n)
	}
	// Under -race the guest is race-built: its side of the transport,
	// just driven concurrently, reports races on its stderr.
	if s := p.(*processPlugin).CurrentStderr(); strings.Contains(s, "DATA RACE") {
		t.Errorf("the guest reported a data race:\n%s", s)
	}
}

// TestProcessCallerCancel: a caller that gives up gets its context error,
// not a plugin fault, and the process keeps serving (not restarted).
func TestProcessCallerCancel(t *testing.T) {
	p := loadProcess(t, "hostile", transport.Options{Grants: transport.Grants{Judge: true}})
	ctx, cancel := context.WithCancel(context.Background())
	svc, done := plugintest.Hold(t, ctx, p.Measure, "c1", 2)
	cancel()
	err := <-done
	close(svc.Release)
	var ae *abi.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &ae) {
		t.Fatalf("want the caller's context.Canceled, got %v", err)
	}
	mustEcho(t, p, "c2")
	if got := p.(*processPlugin).starts.Load(); got != 1 {
		t.Errorf("%d processes started, want 1 (a cancelled call does not kill the process)", got)
	}
}

// TestProcessKilledUnderOtherCalls: a timeout kills the process; a call in
// flight on it fails as a retryable trap that says why, and the plugin
// serves again on a fresh process.
func TestProcessKilledUnderOtherCalls(t *testing.T) {
	p := loadProcess(t, "hostile", transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{Timeout: duration.Duration(30 * time.Second)}})
	svc, bystander := plugintest.Hold(t, context.Background(), p.Measure, "bystander", 1)
	defer close(svc.Release)

	// The caller's own deadline is the timeout here: the plugin's limit
	// is long, and the hang must not take it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Measure(ctx, nil, plugintest.HostileRequest("hang", map[string]any{"behaviour": "hang"}))
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeTimeout || !strings.Contains(ae.Message, "caller's deadline") {
		t.Fatalf("want the caller's timeout, got %v", err)
	}
	err = <-bystander
	if !errors.As(err, &ae) || ae.Code != abi.CodeTrap || !ae.Retryable || !strings.Contains(ae.Message, `case "hang"`) {
		t.Fatalf("want a retryable trap naming the call that killed the process, got %v", err)
	}
	mustEcho(t, p, "after")
	if got := p.(*processPlugin).starts.Load(); got != 2 {
		t.Errorf("%d processes started, want 2", got)
	}
}

// TestProcessRefused: what LoadProcess refuses, and how it says so.
func TestProcessRefused(t *testing.T) {
	ctx := context.Background()
	digest := plugintest.NativeDigest(t)
	bad := "sha256:" + strings.Repeat("0", 64)

	t.Run("digest mismatch, before anything runs", func(t *testing.T) {
		dir := t.TempDir()
		canary := filepath.Join(dir, "canary")
		copyFile(t, plugintest.NativePath("canary"), canary)
		// Unsandboxed, so that the canary can leave its mark if it runs:
		// the digest check comes before any sandbox.
		unconfined := transport.Options{Test: &testknobs.Knobs{SandboxOff: true}}
		_, err := Load(ctx, canary, bad, unconfined, nil)
		if !errors.Is(err, transport.ErrDigestMismatch) || !strings.Contains(err.Error(), canary) ||
			!strings.Contains(err.Error(), "want "+bad) || !strings.Contains(err.Error(), "got "+digest) {
			t.Fatalf("want a mismatch naming path, want and got, got %v", err)
		}
		if _, err := os.Stat(canary + ".started"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the binary ran although its digest was wrong (%v)", err)
		}
		// The canary does leave its mark when it runs.
		p, err := Load(ctx, canary, digest, unconfined, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if _, err := os.Stat(canary + ".started"); err != nil {
			t.Fatalf("the canary ran without leaving its mark: %v", err)
		}
	})
	t.Run("no digest", func(t *testing.T) {
		if _, err := Load(ctx, plugintest.NativePath("hostile"), "", transport.Options{}, nil); err == nil || !strings.Contains(err.Error(), "no sha256 digest pinned") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("binary replaced after load", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "hostile")
		copyFile(t, plugintest.NativePath("hostile"), path)
		p, err := Load(ctx, path, digest, transport.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		// Replace the binary (as a rebuild would: a running executable
		// cannot be written in place), then crash the process: the
		// restart must verify the file again and refuse it.
		if err := os.WriteFile(path+".new", []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Measure(ctx, nil, plugintest.HostileRequest("crash", map[string]any{"behaviour": "panic"})); err == nil {
			t.Fatal("want a trap")
		}
		_, err = p.Measure(ctx, nil, echoRequest("again"))
		var ae *abi.Error
		if !errors.As(err, &ae) || ae.Code != abi.CodeABI || !strings.Contains(ae.Message, "sha256 mismatch") || !strings.Contains(ae.Message, "want "+digest) {
			t.Fatalf("want the restart refused on its digest, got %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		code abi.Code
		want []string
	}{
		{"abi2", abi.CodeABI, []string{"speaks Anvil ABI v2", "this host speaks ABI v1"}},
		{"descmajor", abi.CodeABI, []string{"abi_major 2", "this host speaks ABI v1"}},
		{"nocookie", abi.CodeABI, []string{"exited (exit status 1) before the go-plugin handshake"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := plugintest.NativePath(tc.name)
			_, err := Load(ctx, path, digest, transport.Options{}, nil)
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.code || ae.Plugin != path || ae.Digest != digest {
				t.Fatalf("want %s naming %s and %s, got %#v", tc.code, path, digest, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ae.Message, w) {
					t.Errorf("message lacks %q: %s", w, ae.Message)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, digest[:19]) {
				t.Errorf("message does not name path and digest: %s", msg)
			}
			if tc.name == "nocookie" && !strings.Contains(ae.Stderr, "This binary is a plugin") {
				t.Errorf("stderr not captured: %q", ae.Stderr)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
