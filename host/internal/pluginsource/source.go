package pluginsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/conformance"
	"github.com/agentanvil/anvil/host/internal/lockfile"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugincache"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// Source resolves configured plugins.
type Source struct {
	Client *oci.Client
	Cache  *plugincache.Cache
	Logger *slog.Logger
	// TagCheckTimeout bounds a run's check that a tag has not moved; a
	// registry that does not answer in time is treated as unreachable.
	TagCheckTimeout time.Duration
	// Conformance reads each plugin's conformance attestations too (the
	// trust policy requires one).
	Conformance bool
}

// Resolved is a plugin ready for the trust policy and the runtime.
type Resolved struct {
	// Path is the local module file; ModuleDigest its pinned digest.
	Path, ModuleDigest string
	// Transport is "wasm" or "process" ("" for a local plugin: the config says).
	Transport string
	// Subject is the digest signatures cover: the manifest's for a
	// reference, the module's for a local file.
	Subject    string
	Signatures [][]byte
	// Attestations are the conformance attestations found for Subject,
	// read only when the source's Conformance asks for them.
	Attestations []trust.Attestation
	// Summary is what the manifest claims about the descriptor (nil for a
	// local file); the caller checks it against the module's own.
	Summary *oci.Summary
	// ID names the plugin in messages: oci://REGISTRY/REPO@sha256:… or the path.
	ID string
}

// Local resolves a plugin configured by path: the pinned digest is the
// subject, and the signature is the sidecar PATH.sig.
func Local(path, pinned string) (Resolved, error) {
	sigs, err := trust.ReadSidecar(path)
	if err != nil {
		return Resolved{}, err
	}
	d := "sha256:" + strings.TrimPrefix(strings.ToLower(strings.TrimSpace(pinned)), "sha256:")
	return Resolved{Path: path, ModuleDigest: d, Subject: d, Signatures: sigs, ID: path}, nil
}

// manifestMax bounds a manifest or config read from the cache.
const manifestMax = 1 << 20

// Pull resolves a plugin configured by ref, as entry of anvil.lock pins
// it: from the cache when it is there, from the registry otherwise.
func (s *Source) Pull(ctx context.Context, name string, pc *config.Plugin, entry *lockfile.Entry, maxModuleBytes int64) (Resolved, error) {
	ref, err := oci.ParseRef(pc.Ref, true)
	if err != nil {
		return Resolved{}, err
	}
	if entry == nil {
		return Resolved{}, fmt.Errorf("%s is not in %s: run `anvil-host lock` to resolve it to a digest", pc.Ref, lockfile.Name)
	}
	if entry.Ref != pc.Ref {
		return Resolved{}, fmt.Errorf("%s pins %s, but the config now says %s: run `anvil-host lock --update`", lockfile.Name, entry.Ref, pc.Ref)
	}
	if ref.Digest != "" && ref.Digest != entry.Digest {
		return Resolved{}, fmt.Errorf("%s pins %s to %s, but the reference itself names %s: the lockfile was edited by hand or is corrupt; run `anvil-host lock --update`",
			lockfile.Name, pc.Ref, entry.Digest, ref.Digest)
	}
	pinned := ref.WithDigest(entry.Digest)
	online := true
	if ref.Digest == "" {
		tctx, cancel := context.WithTimeout(ctx, s.TagCheckTimeout)
		desc, err := s.Client.Resolve(tctx, ref)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return Resolved{}, ctx.Err()
		case err != nil:
			online = false
			s.Logger.Warn("registry unreachable: using anvil.lock and the plugin cache", "plugin", name, "ref", pc.Ref, "err", err)
		case desc.Digest.String() != entry.Digest:
			return Resolved{}, &MovedError{Ref: pc.Ref, Locked: entry.Digest, Now: desc.Digest.String()}
		}
	}
	p, err := s.manifest(ctx, pinned, entry, online)
	if err != nil {
		return Resolved{}, err
	}
	if err := crossCheck(entry, p); err != nil {
		return Resolved{}, err
	}
	if pc.Transport != "" && pc.Transport != p.Transport {
		return Resolved{}, fmt.Errorf("%s is a %s plugin, but the config says transport %q", pinned, p.Transport, pc.Transport)
	}
	path, err := s.Cache.Path(p.Layer.Digest.String())
	if err != nil {
		return Resolved{}, err
	}
	if !s.Cache.Has(p.Layer.Digest.String()) {
		if !online {
			return Resolved{}, coldErr(pinned, s.Cache, "module "+p.Layer.Digest.String())
		}
		b, err := s.Client.FetchLayer(ctx, pinned, p, maxModuleBytes)
		if err != nil {
			return Resolved{}, err
		}
		if _, err := s.Cache.Put(b, p.Transport == oci.TransportProcess); err != nil {
			return Resolved{}, err
		}
	}
	sigs, err := s.signatures(ctx, pinned, p.Manifest, online)
	if err != nil {
		return Resolved{}, err
	}
	var atts []trust.Attestation
	if s.Conformance {
		if atts, err = s.attestations(ctx, pinned, p.Manifest, p.Layer.Digest.String(), online); err != nil {
			return Resolved{}, err
		}
	}
	sum := p.Summary
	return Resolved{Path: path, ModuleDigest: p.Layer.Digest.String(), Transport: p.Transport,
		Subject: entry.Digest, Signatures: sigs, Attestations: atts, Summary: &sum, ID: pinned.String()}, nil
}

// MovedError is a tag that resolves to another digest than the lock's.
type MovedError struct{ Ref, Locked, Now string }

func (e *MovedError) Error() string {
	return fmt.Sprintf("tag %s moved: %s pins %s, the registry now has %s; nothing was loaded (accept the new digest with `anvil-host lock --update`)",
		e.Ref, lockfile.Name, e.Locked, e.Now)
}

func coldErr(r oci.Ref, c *plugincache.Cache, what string) error {
	return fmt.Errorf("%s: %s is not in the plugin cache (%s) and the registry cannot be reached: nothing was loaded (pull it while the registry is up: `anvil-host plugin pull %s`)",
		r, what, c.Dir(), r)
}

// manifest reads the pinned manifest and config from the cache, or from
// the registry (storing them) when they are not there.
func (s *Source) manifest(ctx context.Context, r oci.Ref, entry *lockfile.Entry, online bool) (oci.Plugin, error) {
	desc := ocispec.Descriptor{MediaType: entry.MediaType, Digest: digest.Digest(entry.Digest), Size: entry.Size}
	if raw, err := s.Cache.Get(entry.Digest, manifestMax); err == nil {
		var m ocispec.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return oci.Plugin{}, fmt.Errorf("%s: cached manifest: %w", r, err)
		}
		config, err := s.Cache.Get(m.Config.Digest.String(), manifestMax)
		if err == nil {
			p, err := oci.ParsePlugin(desc, raw, config)
			if err != nil {
				return oci.Plugin{}, fmt.Errorf("%s: %w", r, err)
			}
			return p, nil
		}
		if !errors.Is(err, plugincache.ErrMiss) {
			return oci.Plugin{}, err
		}
	} else if !errors.Is(err, plugincache.ErrMiss) {
		return oci.Plugin{}, err
	}
	if !online {
		return oci.Plugin{}, coldErr(r, s.Cache, "manifest "+entry.Digest)
	}
	f, err := s.Client.FetchPlugin(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return oci.Plugin{}, ctx.Err()
		}
		return oci.Plugin{}, fmt.Errorf("manifest %s is not in the plugin cache (%s) and could not be read from the registry: nothing was loaded: %w", entry.Digest, s.Cache.Dir(), err)
	}
	if _, err := s.Cache.Put(f.ConfigRaw, false); err != nil {
		return oci.Plugin{}, err
	}
	if _, err := s.Cache.Put(f.ManifestRaw, false); err != nil {
		return oci.Plugin{}, err
	}
	return f.Plugin, nil
}

// signatures fetches the manifest's signature referrers (caching them)
// when the registry is reachable, and reads the cached ones otherwise.
func (s *Source) signatures(ctx context.Context, r oci.Ref, subject ocispec.Descriptor, online bool) ([][]byte, error) {
	if online {
		sigs, err := s.Client.Signatures(ctx, r, subject)
		if err == nil {
			return sigs, s.Cache.PutSignatures(subject.Digest.String(), sigs)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.Logger.Warn("could not list signatures; using the cached ones", "ref", r.String(), "err", err)
	}
	sigs, err := s.Cache.Signatures(subject.Digest.String())
	if errors.Is(err, plugincache.ErrMiss) {
		return nil, nil
	}
	return sigs, err
}

// attestations fetches the manifest's conformance attestations and their
// signatures (caching them) when the registry is reachable, and reads the
// cached ones otherwise. An attestation that does not read, or that tested
// another module than the manifest's, is kept as one that did not pass,
// so the policy says why.
func (s *Source) attestations(ctx context.Context, r oci.Ref, subject ocispec.Descriptor, module string, online bool) ([]trust.Attestation, error) {
	var found []plugincache.Attested
	read := false
	if online {
		refs, err := s.Client.Conformance(ctx, r, subject)
		if err == nil {
			for _, ref := range refs {
				sigs, err := s.Client.Signatures(ctx, r, ref.Manifest)
				if err != nil {
					return nil, err
				}
				if err := s.Cache.PutSignatures(ref.Manifest.Digest.String(), sigs); err != nil {
					return nil, err
				}
				found = append(found, plugincache.Attested{Digest: ref.Manifest.Digest.String(), Doc: ref.Doc})
			}
			if err := s.Cache.PutAttestations(subject.Digest.String(), found); err != nil {
				return nil, err
			}
			read = true
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		} else {
			s.Logger.Warn("could not list conformance attestations; using the cached ones", "ref", r.String(), "err", err)
		}
	}
	if !read {
		var err error
		found, err = s.Cache.Attestations(subject.Digest.String())
		if errors.Is(err, plugincache.ErrMiss) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	var out []trust.Attestation
	for _, f := range found {
		sigs, err := s.Cache.Signatures(f.Digest)
		if err != nil && !errors.Is(err, plugincache.ErrMiss) {
			return nil, err
		}
		t := trust.Attestation{Digest: f.Digest, Subject: subject.Digest.String(), Signatures: sigs}
		switch a, err := conformance.ParseAttestation(f.Doc); {
		case err != nil:
			t.Summary = "unreadable: " + err.Error()
		case a.Module != module:
			t.Subject, t.Summary = a.Subject, fmt.Sprintf("it tested module %s, the manifest names %s", a.Module, module)
		default:
			t.Subject, t.Passed, t.Summary = a.Subject, a.OK(), a.Summary()
		}
		out = append(out, t)
	}
	return out, nil
}

// crossCheck refuses a lock entry that says something its manifest does
// not: the lock is then edited by hand or corrupt, and trusting it would
// let the edit decide what runs.
func crossCheck(e *lockfile.Entry, p oci.Plugin) error {
	var diffs []string
	diff := func(field string, lock, manifest any) {
		diffs = append(diffs, fmt.Sprintf("%s is %v in %s but %v in manifest %s", field, lock, lockfile.Name, manifest, p.Manifest.Digest))
	}
	if e.Module.Digest != p.Layer.Digest.String() {
		diff("module.digest", e.Module.Digest, p.Layer.Digest)
	}
	if e.Module.Size != p.Layer.Size {
		diff("module.size", e.Module.Size, p.Layer.Size)
	}
	if e.Module.MediaType != p.Layer.MediaType {
		diff("module.media_type", e.Module.MediaType, p.Layer.MediaType)
	}
	if e.Transport != p.Transport {
		diff("transport", e.Transport, p.Transport)
	}
	if e.ABI != p.Summary.ABI {
		diff("abi", e.ABI, p.Summary.ABI)
	}
	if !slices.Equal(sorted(e.Capabilities), p.Summary.Capabilities) {
		diff("capabilities", "["+strings.Join(e.Capabilities, ",")+"]", "["+strings.Join(p.Summary.Capabilities, ",")+"]")
	}
	if !slices.Equal(sorted(e.Kinds), p.Summary.Kinds) {
		diff("kinds", "["+strings.Join(e.Kinds, ",")+"]", "["+strings.Join(p.Summary.Kinds, ",")+"]")
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s entry for %s does not match the manifest it pins: %s; the lockfile was edited by hand or is corrupt, nothing was loaded (regenerate it: `anvil-host lock --update`)",
			lockfile.Name, e.Ref, strings.Join(diffs, "; "))
	}
	return nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if s == nil {
		s = []string{}
	}
	return s
}
