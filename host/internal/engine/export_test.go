package engine

import (
	"context"
	"time"

	"github.com/agentanvil/anvil/sdk"
)

// WithInprocPlugins links test plugins in beside the first-party kinds.
func WithInprocPlugins(o *Options, ps ...*sdk.Plugin) { o.extraPlugins = append(o.extraPlugins, ps...) }
func Printable(s string) string                       { return printable(s) }

// WithSampleWindow sets how long a sample's request waits for the other
// samples' alike requests.
func WithSampleWindow(o *Options, d time.Duration) { o.sampleWindow = d }

// WithCompileGate holds every Wasm compile back until gate returns.
func WithCompileGate(o *Options, gate func(ctx context.Context, digest string) error) {
	o.beforeCompile = gate
}
