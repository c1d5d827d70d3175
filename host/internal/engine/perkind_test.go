package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/sdk"
)

type noConfig struct{}

// mixed is a plugin of ABI minor 1 with two metric kinds: "plain" asks for
// nothing, "judged" asks for the judge (per kind; the plugin's list is the
// union).
func mixed() *sdk.Plugin {
	score := func(v float64) *float64 { return &v }
	return &sdk.Plugin{Name: "mixed", Version: "0.1.0", Kinds: []sdk.Kind{
		&sdk.MetricKind[noConfig]{Name: "plain", RequiredFields: []string{"actual_output"},
			Measure: func(_ context.Context, _ sdk.Host, _ *noConfig, r *abi.MeasureRequest) (*abi.MeasureResult, error) {
				return &abi.MeasureResult{Score: score(1), Success: true, Threshold: r.Threshold}, nil
			}},
		&sdk.MetricKind[noConfig]{Name: "judged", Capabilities: []abi.Capability{abi.CapJudge},
			Measure: func(ctx context.Context, h sdk.Host, _ *noConfig, r *abi.MeasureRequest) (*abi.MeasureResult, error) {
				if _, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "hi"}}}}); err != nil {
					return nil, err
				}
				return &abi.MeasureResult{Score: score(1), Success: true, Threshold: r.Threshold}, nil
			}},
	}}
}

func runMixed(t *testing.T, cfgText string) (env, *results.Summary, error) {
	t.Helper()
	e := newEnv(t, cfgText)
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{Cache: "off", StorePath: e.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) string { return "" }}
	engine.WithInprocPlugins(&opts, mixed())
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		return e, nil, err
	}
	defer eng.Close(context.Background())
	s, err := eng.Run(context.Background(), engine.RunOptions{OutputDir: e.out})
	return e, s, err
}

// TestPerKindCapabilities: a judge-free kind of a plugin whose other kind
// asks for the judge runs with no judge configured (ABI minor 1); before,
// the plugin-wide list made every kind of the plugin need one.
func TestPerKindCapabilities(t *testing.T) {
	d := mixed().Describe()
	if d.ABIMinor != abi.Minor || len(d.Capabilities) != 1 || d.Capabilities[0] != abi.CapJudge {
		t.Fatalf("descriptor: minor %d, capabilities %q; want %d, [judge]", d.ABIMinor, d.Capabilities, abi.Minor)
	}
	if d.KindAsks(d.Kinds[0], abi.CapJudge) || !d.KindAsks(d.Kinds[1], abi.CapJudge) {
		t.Fatalf("kinds ask %q and %q; want [] and [judge]", d.Kinds[0].Capabilities, d.Kinds[1].Capabilities)
	}

	t.Run("no judge configured", func(t *testing.T) {
		e, s, err := runMixed(t, `version: 1
dataset: cases.jsonl
metrics:
  - name: p
    kind: plain
    threshold: 0.5
`)
		if err != nil {
			t.Fatal(err)
		}
		res := readResults(t, e.out)
		for _, id := range []string{"c1", "c2", "c3", "c4"} {
			m := res[id].Metrics[0]
			if m.Status != results.StatusPassed || m.Score == nil || *m.Score != 1 {
				t.Fatalf("%s: %+v; want passed with score 1", id, m)
			}
		}
		if s.Verdict != results.VerdictPassed {
			t.Fatalf("verdict %s, want passed", s.Verdict)
		}
	})

	for name, judges := range map[string]string{
		"implicit judge, no key": "",
		"named judge, no key":    "judges:\n  default: {model: m, api_key_env: ANVIL_NO_SUCH_KEY, base_url: \"https://judge.invalid/v1\"}\n",
	} {
		t.Run(name+": only the judged kind is skipped", func(t *testing.T) {
			e, _, err := runMixed(t, `version: 1
dataset: cases.jsonl
`+judges+`metrics:
  - name: p
    kind: plain
    threshold: 0.5
  - name: j
    kind: judged
    threshold: 0.5
`)
			if err != nil {
				t.Fatal(err)
			}
			for id, r := range readResults(t, e.out) {
				byName := map[string]results.MetricResult{}
				for _, m := range r.Metrics {
					byName[m.Metric] = m
				}
				if byName["p"].Status != results.StatusPassed {
					t.Errorf("%s: plain metric %+v; want passed", id, byName["p"])
				}
				if byName["j"].Status != results.StatusSkipped {
					t.Errorf("%s: judged metric %+v; want skipped", id, byName["j"])
				}
			}
		})
	}
}
