package pluginsource

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/lockfile"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// Locked is one plugin as Lock resolved it.
type Locked struct {
	Name, Ref, Digest string
	// Previous is the digest the old lock had ("" when new).
	Previous string
	Signer   string
}

// Lock resolves every plugin cfg names by reference to its manifest
// digest, pulls manifest, module and signatures into the cache, checks
// the trust policy, and returns the new lock. A tag that resolves to
// another digest than old pins is an error naming both, unless update.
// Plugins no longer in the config leave the lock.
func (s *Source) Lock(ctx context.Context, cfg *config.Config, old *lockfile.Lock, update bool, policy *trust.Policy) (*lockfile.Lock, []Locked, error) {
	l := &lockfile.Lock{Version: lockfile.Version, Plugins: map[string]*lockfile.Entry{}}
	names := make([]string, 0, len(cfg.Plugins))
	for n, pc := range cfg.Plugins {
		if pc.Ref != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []Locked
	var errs []error
	for _, name := range names {
		pc := cfg.Plugins[name]
		where := fmt.Sprintf("%s:%d: plugins.%s", cfg.File, pc.Line, name)
		prev := ""
		if old != nil && old.Plugins[name] != nil && old.Plugins[name].Ref == pc.Ref {
			prev = old.Plugins[name].Digest
		}
		e, signer, err := s.lockOne(ctx, name, pc, policy, prev, update)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		l.Plugins[name] = e
		out = append(out, Locked{Name: name, Ref: pc.Ref, Digest: e.Digest, Previous: prev, Signer: signer})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return l, out, nil
}

// lockOne resolves and pulls one plugin. prev is the digest the old lock
// pins ("" when none): another digest is a moved tag, refused unless update.
func (s *Source) lockOne(ctx context.Context, name string, pc *config.Plugin, policy *trust.Policy, prev string, update bool) (*lockfile.Entry, string, error) {
	ref, err := oci.ParseRef(pc.Ref, true)
	if err != nil {
		return nil, "", err
	}
	f, err := s.Client.FetchPlugin(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	if prev != "" && prev != f.Manifest.Digest.String() && !update {
		return nil, "", &MovedError{Ref: pc.Ref, Locked: prev, Now: f.Manifest.Digest.String()}
	}
	pinned := ref.WithDigest(f.Manifest.Digest.String())
	if pc.Transport != "" && pc.Transport != f.Transport {
		return nil, "", fmt.Errorf("%s is a %s plugin, but the config says transport %q", pinned, f.Transport, pc.Transport)
	}
	if _, err := s.Cache.Put(f.ConfigRaw, false); err != nil {
		return nil, "", err
	}
	if _, err := s.Cache.Put(f.ManifestRaw, false); err != nil {
		return nil, "", err
	}
	maxBytes := pc.Limits.WithDefaults().MaxModuleBytes
	if !s.Cache.Has(f.Layer.Digest.String()) {
		b, err := s.Client.FetchLayer(ctx, pinned, f.Plugin, maxBytes)
		if err != nil {
			return nil, "", err
		}
		if _, err := s.Cache.Put(b, f.Transport == oci.TransportProcess); err != nil {
			return nil, "", err
		}
	}
	sigs, err := s.Client.Signatures(ctx, pinned, f.Manifest)
	if err != nil {
		return nil, "", err
	}
	if err := s.Cache.PutSignatures(f.Manifest.Digest.String(), sigs); err != nil {
		return nil, "", err
	}
	var atts []trust.Attestation
	if policy.RequireConformance {
		if atts, err = s.attestations(ctx, pinned, f.Manifest, f.Layer.Digest.String(), true); err != nil {
			return nil, "", err
		}
	}
	dec, err := policy.Check(trust.Subject{Plugin: name, Digest: f.Manifest.Digest.String(), Signatures: sigs,
		Granted: Granted(pc), RequireSignature: pc.RequireSignature, Attestations: atts})
	if err != nil {
		return nil, "", err
	}
	e := &lockfile.Entry{Ref: pc.Ref, Digest: f.Manifest.Digest.String(), MediaType: f.Manifest.MediaType, Size: f.Manifest.Size,
		Module:    lockfile.Blob{Digest: f.Layer.Digest.String(), MediaType: f.Layer.MediaType, Size: f.Layer.Size},
		Transport: f.Transport, ABI: f.Summary.ABI, Kinds: f.Summary.Kinds, Capabilities: f.Summary.Capabilities,
		Signer: dec.Signer()}
	return e, dec.Signer(), nil
}
