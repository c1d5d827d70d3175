package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/sdk"
)

// TestConfiguredPluginReplacesABuiltinKind: a plugin the config names
// (a first-party kind pulled from a registry at a pinned version, say)
// provides a kind the host also links; the configured one measures, the
// linked one is not asked. Two configured plugins providing one kind stay
// an error naming both.
func TestConfiguredPluginReplacesABuiltinKind(t *testing.T) {
	wasm, digest := buildTextcheck(t)
	linked := 0
	builtin := &sdk.Plugin{Name: "linked", Version: "0.0.1", Kinds: []sdk.Kind{
		&sdk.MetricKind[struct{}]{Name: "exact_match", RequiredFields: []string{abi.FieldActualOutput},
			Measure: func(context.Context, sdk.Host, *struct{}, *abi.MeasureRequest) (*abi.MeasureResult, error) {
				linked++
				score := 0.123
				return &abi.MeasureResult{Score: &score}, nil
			}},
	}}
	load := func(plugins string) (*engine.Engine, string, error) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"cases.jsonl": compileCases, "anvil.yaml": "version: 1\ndataset: cases.jsonl\n" +
			plugins + "metrics:\n  - {name: exact, kind: exact_match, params: {ignore_case: true}}\n"})
		cfg, err := config.Load(filepath.Join(dir, "anvil.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		opts := engine.Options{Cache: "off", CompileCacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Getenv: func(string) string { return "" }}
		engine.WithInprocPlugins(&opts, builtin)
		eng, err := engine.New(context.Background(), cfg, opts)
		return eng, filepath.Join(dir, "out"), err
	}

	eng, out, err := load(fmt.Sprintf("plugins:\n  textcheck: {path: %s, sha256: %s}\n", wasm, digest))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	s, err := eng.Run(context.Background(), engine.RunOptions{OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics[0]; linked != 0 || m.Passed != 1 || m.Failed != 1 {
		t.Errorf("the linked kind measured %d times; the metric %d passed, %d failed: want the configured plugin's exact_match (1 and 1)", linked, m.Passed, m.Failed)
	}

	_, _, err = load(fmt.Sprintf("plugins:\n  a: {path: %s, sha256: %s}\n  b: {path: %s, sha256: %s}\n", wasm, digest, wasm, digest))
	if err == nil || !strings.Contains(err.Error(), `metric kind "exact_match" is provided by both plugin a`) || !strings.Contains(err.Error(), "and plugin b") {
		t.Errorf("two configured plugins with one kind: %v", err)
	}
}
