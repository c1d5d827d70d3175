package engine

import (
	"context"
	"time"

	"github.com/agentanvil/anvil/sdk"
)

// WithInprocPlugins links test plugins in beside the first-party kinds.
func WithInprocPlugins(o *Options, ps ...*sdk.Plugin) { o.extraPlugins = append(o.extraPlugins, ps...) }

// WithSampleWindow sets how long a sample's request waits for the other
// samples' alike requests.
func WithSampleWindow(o *Options, d time.Duration) { o.sampleWindow = d }

// WithCompileGate holds every Wasm compile back until gate returns.
func WithCompileGate(o *Options, gate func(ctx context.Context, digest string) error) {
	o.beforeCompile = gate
}

// WaitCompiled waits for the plugins New left compiling.
func WaitCompiled(ctx context.Context, e *Engine) error {
	for _, d := range e.compiling.plugins {
		if err := d.p.Ready(ctx); err != nil {
			return err
		}
	}
	return nil
}
