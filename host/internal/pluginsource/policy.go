package pluginsource

import (
	"fmt"
	"sort"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// Policy builds the trust policy of cfg, reading each publisher's key
// (relative to the config file).
func Policy(cfg *config.Config) (*trust.Policy, error) {
	p := &trust.Policy{RequireAll: cfg.Trust.RequireSignatures, RequireConformance: cfg.Trust.RequireConformance}
	names := make([]string, 0, len(cfg.Trust.Publishers))
	for n := range cfg.Trust.Publishers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pc := cfg.Trust.Publishers[n]
		key, err := trust.LoadPublicKey(cfg.Resolve(pc.Key))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: trust.publishers.%s: %w", cfg.File, pc.Line, n, err)
		}
		pub := trust.Publisher{Name: n, Key: key}
		for _, c := range pc.Capabilities {
			pub.Capabilities = append(pub.Capabilities, abi.Capability(c))
		}
		p.Publishers = append(p.Publishers, pub)
	}
	return p, nil
}

// Granted lists the capabilities the config grants plugin pc.
func Granted(pc *config.Plugin) []abi.Capability {
	var out []abi.Capability
	for _, c := range []abi.Capability{abi.CapJudge} {
		if pc.Grants.Has(c) {
			out = append(out, c)
		}
	}
	return out
}
