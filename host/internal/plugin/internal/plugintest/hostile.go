package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// Guest is a loaded plugin as the shared checks drive it. S is the
// transport's Services type: this package cannot name it (package
// transport's own tests import this one).
type Guest[S any] struct {
	Measure func(ctx context.Context, svc S, req *abi.MeasureRequest) (*abi.MeasureResult, error)
	// Started counts the instances or processes the plugin has started:
	// a replaced one shows.
	Started func() int64
}

// Hostile is a transport's hostile guest loaded three ways for
// RunHostile: Plain with the test's limits, Granted with the judge too,
// Impatient with a short timeout.
type Hostile[S any] struct {
	ID, Digest                string // what every error must name
	StderrMax                 int    // the most captured stderr an error may carry
	Plain, Granted, Impatient Guest[S]
}

// HostileCase is one misbehaviour of a hostile guest and what the host
// must make of it.
type HostileCase struct {
	Behaviour string
	Cfg       map[string]any // more of the guest's config
	Granted   bool           // run on the plugin granted the judge
	Impatient bool           // run on the plugin with the short timeout
	Code      abi.Code       // the invocation's error, or
	ResCode   abi.Code       // the error inside the result, or neither
	Replaced  bool           // the instance or process is replaced after it
	Stderr    []string       // in the error's captured stderr
	Judged    int64          // judge requests that reached Services
	// Check judges what the guest observed (its result's details) when it
	// returns a result.
	Check func(t *testing.T, obs map[string]any)
}

// RunHostile runs each case on h as a subtest named by its behaviour (and
// size, if any): the right typed error naming plugin and digest, the
// judge calls that reached the host, a healthy next call, on a replaced
// instance or process only where the case says. Last, nothing any guest
// returned may hold FakeSecret.
func RunHostile[S any](t *testing.T, h Hostile[S], cases []HostileCase) {
	t.Helper()
	ctx := context.Background()
	var outputs []string // everything a guest produced, searched for the secret
	for _, c := range cases {
		name := c.Behaviour
		if size, ok := c.Cfg["size"]; ok {
			name = fmt.Sprint(name, "/", size)
		}
		t.Run(name, func(t *testing.T) {
			g := h.Plain
			switch {
			case c.Granted:
				g = h.Granted
			case c.Impatient:
				g = h.Impatient
			}
			fake := &FakeServices{TokensPerCall: 10}
			svc := any(fake).(S)
			cfg := map[string]any{"behaviour": c.Behaviour}
			for k, v := range c.Cfg {
				cfg[k] = v
			}
			before := g.Started()
			res, err := g.Measure(ctx, svc, HostileRequest(c.Behaviour, cfg))
			if err != nil {
				outputs = append(outputs, err.Error())
			}
			if res != nil {
				outputs = append(outputs, MustJSON(t, res))
			}
			switch {
			case c.Code != "":
				var ae *abi.Error
				if !errors.As(err, &ae) || ae.Code != c.Code {
					t.Fatalf("want %s error, got %v (result %s)", c.Code, err, MustJSON(t, res))
				}
				if ae.Plugin != h.ID || ae.Digest != h.Digest {
					t.Errorf("error names %s / %s, want %s / %s", ae.Plugin, ae.Digest, h.ID, h.Digest)
				}
				if msg := err.Error(); !strings.Contains(msg, "plugin "+h.ID+"@"+h.Digest[:19]) || !strings.Contains(msg, `case "`+c.Behaviour+`"`) {
					t.Errorf("message does not say which plugin and case: %s", msg)
				}
				for _, s := range c.Stderr {
					if !strings.Contains(ae.Stderr, s) {
						t.Errorf("stderr lacks %q:\n%s", s, ae.Stderr)
					}
				}
				if len(ae.Stderr) > h.StderrMax {
					t.Errorf("stderr is %d bytes, want at most %d", len(ae.Stderr), h.StderrMax)
				}
			case c.ResCode != "":
				if err != nil || res.Error == nil || res.Error.Code != c.ResCode {
					t.Fatalf("want result error %s, got %v / %s", c.ResCode, err, MustJSON(t, res))
				}
				if res.Error.Plugin != h.ID || res.Error.Digest != h.Digest {
					t.Errorf("result error names %s / %s", res.Error.Plugin, res.Error.Digest)
				}
			default:
				if err != nil || res.Error != nil {
					t.Fatalf("want a result, got %v / %s", err, MustJSON(t, res))
				}
				var obs map[string]any
				if err := json.Unmarshal(res.Details, &obs); err != nil {
					t.Fatal(err)
				}
				c.Check(t, obs)
			}
			if got := fake.Calls.Load(); got != c.Judged {
				t.Errorf("%d judge requests reached the host services, want %d", got, c.Judged)
			}

			res, err = g.Measure(ctx, svc, HostileRequest("next", map[string]any{"behaviour": "echo"}))
			if err != nil || res.Error != nil || res.Reason != "next|in-next" {
				t.Fatalf("plugin does not serve after %s: %v / %s", c.Behaviour, err, MustJSON(t, res))
			}
			started := g.Started() - before
			if c.Replaced && started != 1 {
				t.Errorf("%d started after a %s, want 1 (the faulty one replaced)", started, c.Code)
			}
			if !c.Replaced && started != 0 {
				t.Errorf("%d started after a %s %s, want 0 (kept)", started, c.Code, c.ResCode)
			}
		})
	}
	for _, o := range outputs {
		if strings.Contains(o, FakeSecret) {
			t.Fatalf("the host's secret leaked into guest output: %s", o)
		}
	}
}

// Hold starts a call of the hostile guest, through measure, that asks the
// judge calls times, and returns once the call waits inside the host's
// judge: svc answers when svc.Release is closed, and done takes the
// call's error, or its result's. A call that ends without reaching the
// judge fails t.
func Hold[S any](t testing.TB, ctx context.Context, measure func(context.Context, S, *abi.MeasureRequest) (*abi.MeasureResult, error), id string, calls int) (svc *BlockingServices, done <-chan error) {
	t.Helper()
	svc = NewBlockingServices()
	ended := make(chan error, 1)
	go func() {
		res, err := measure(ctx, any(svc).(S), HostileRequest(id, map[string]any{"behaviour": "judge_many", "calls": calls}))
		if err == nil && res != nil && res.Error != nil {
			err = res.Error
		}
		ended <- err
	}()
	select {
	case <-svc.Entered:
	case err := <-ended:
		t.Fatalf("call %s ended without reaching the judge: %v", id, err)
	}
	return svc, ended
}
