package engine

import "github.com/agentanvil/anvil/sdk"

// WithInprocPlugins links test plugins in beside the first-party kinds.
func WithInprocPlugins(o *Options, ps ...*sdk.Plugin) { o.extraPlugins = append(o.extraPlugins, ps...) }
func Printable(s string) string                       { return printable(s) }
