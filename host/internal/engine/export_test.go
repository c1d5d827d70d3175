package engine

import (
	"time"

	"github.com/agentanvil/anvil/sdk"
)

// WithInprocPlugins links test plugins in beside the first-party kinds.
func WithInprocPlugins(o *Options, ps ...*sdk.Plugin) { o.extraPlugins = append(o.extraPlugins, ps...) }
func Printable(s string) string                       { return printable(s) }

// WithSampleWindow sets how long a sample's request waits for the other
// samples' alike requests.
func WithSampleWindow(o *Options, d time.Duration) { o.sampleWindow = d }
