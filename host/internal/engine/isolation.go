package engine

import (
	"sort"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// PluginIsolation is one configured process plugin's OS isolation.
type PluginIsolation struct {
	Name   string // the plugin's key in the config
	ID     string // plugin@version
	Report *plugin.IsolationReport
}

// ProcessIsolation lists the OS isolation every configured process
// plugin obtained at load, by config name; `validate` shows it.
func (e *Engine) ProcessIsolation() []PluginIsolation {
	var out []PluginIsolation
	for name := range e.cfg.Plugins {
		p, ok := e.plugins[name]
		if !ok || p.Info().Isolation == nil {
			continue
		}
		out = append(out, PluginIsolation{Name: name, ID: p.Info().ID(), Report: p.Info().Isolation})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
