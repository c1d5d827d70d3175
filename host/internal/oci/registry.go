package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// reproducibleCreated is the manifest's created annotation: fixed, so the
// same module and descriptor always push to the same manifest digest and
// pushing again does not move a tag.
const reproducibleCreated = "1970-01-01T00:00:00Z"

// Push uploads a as a plugin artifact and tags it r.Tag. It returns the
// manifest's descriptor.
func (c *Client) Push(ctx context.Context, r Ref, a Artifact) (ocispec.Descriptor, error) {
	if r.Tag == "" {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: name a tag (oci://REGISTRY/REPO:TAG)", r)
	}
	repo, err := c.Repository(r)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	config, configType, layerType, err := a.layout()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, err := oras.PushBytes(ctx, repo, layerType, a.Module)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: module layer: %w", r, err)
	}
	cfg, err := oras.PushBytes(ctx, repo, configType, config)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: config: %w", r, err)
	}
	ann := a.Summary.Annotations(a.Transport)
	ann[ocispec.AnnotationCreated] = reproducibleCreated
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &cfg, Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: ann})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: manifest: %w", r, err)
	}
	if err := repo.Tag(ctx, desc, r.Tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: tag: %w", r, err)
	}
	return desc, nil
}

// Resolve returns the manifest descriptor r names now.
func (c *Client) Resolve(ctx context.Context, r Ref) (ocispec.Descriptor, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := repo.Resolve(ctx, r.Target())
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %w", r, err)
	}
	if r.Digest != "" && desc.Digest.String() != r.Digest {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %s: the registry answered %s", r, desc.Digest)
	}
	return desc, nil
}

// Fetched is a plugin manifest as read from a registry: parsed, and the
// raw manifest and config bytes for a cache.
type Fetched struct {
	Plugin
	ManifestRaw, ConfigRaw []byte
}

// FetchPlugin reads the manifest r names and its config, bounded and
// digest-verified, and parses them (no layer is downloaded).
func (c *Client) FetchPlugin(ctx context.Context, r Ref) (Fetched, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return Fetched{}, err
	}
	desc, rc, err := repo.FetchReference(ctx, r.Target())
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", r, err)
	}
	defer rc.Close()
	if r.Digest != "" && desc.Digest.String() != r.Digest {
		return Fetched{}, fmt.Errorf("fetch %s: the registry answered %s", r, desc.Digest)
	}
	if desc.Size > maxManifestBytes {
		return Fetched{}, fmt.Errorf("fetch %s: manifest of %d bytes is above the %d-byte bound", r, desc.Size, maxManifestBytes)
	}
	manifest, err := content.ReadAll(rc, desc)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: manifest: %w", r, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: manifest %s: %w", r, desc.Digest, err)
	}
	if m.Config.Size > maxConfigBytes || m.Config.Size < 0 {
		return Fetched{}, fmt.Errorf("fetch %s: config of %d bytes is out of bounds", r, m.Config.Size)
	}
	config, err := content.FetchAll(ctx, repo, m.Config)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: config: %w", r, err)
	}
	p, err := ParsePlugin(desc, manifest, config)
	if err != nil {
		return Fetched{}, fmt.Errorf("%s: %w", r, err)
	}
	return Fetched{Plugin: p, ManifestRaw: manifest, ConfigRaw: config}, nil
}

// FetchLayer downloads the plugin's module, refusing one above maxBytes
// before reading it; the bytes are checked against the layer digest.
func (c *Client) FetchLayer(ctx context.Context, r Ref, p Plugin, maxBytes int64) ([]byte, error) {
	if p.Layer.Size > maxBytes || p.Layer.Size < 0 {
		return nil, fmt.Errorf("%s@%s: module of %d bytes is above max_module_bytes %d", r, p.Manifest.Digest, p.Layer.Size, maxBytes)
	}
	repo, err := c.Repository(r)
	if err != nil {
		return nil, err
	}
	b, err := content.FetchAll(ctx, repo, p.Layer)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: module layer %s: %w", r, p.Manifest.Digest, p.Layer.Digest, err)
	}
	return b, nil
}

// Tags lists the tags of r's repository.
func (c *Client) Tags(ctx context.Context, r Ref) ([]string, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return nil, err
	}
	var tags []string
	err = repo.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil })
	if err != nil {
		return nil, fmt.Errorf("list tags of %s: %w", r, err)
	}
	return tags, nil
}

// PushSignature stores sig (a trust.Signature in JSON) as a referrer of
// the plugin manifest subject.
func (c *Client) PushSignature(ctx context.Context, r Ref, subject ocispec.Descriptor, sig []byte) (ocispec.Descriptor, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, err := oras.PushBytes(ctx, repo, SignatureArtifact, sig)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	// The config's media type is the artifact type too: registries that
	// derive a referrer's artifact type from its config (as the OCI spec
	// allows when artifactType is absent) then agree with those that read
	// artifactType.
	cfg, err := oras.PushBytes(ctx, repo, SignatureArtifact, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	// Packed in memory first, so the manifest's descriptor is known even
	// when the push below ends with a tolerated error.
	packed := memory.New()
	desc, err := oras.PackManifest(ctx, packed, oras.PackManifestVersion1_1, SignatureArtifact, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &cfg,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: reproducibleCreated}})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	manifest, err := content.FetchAll(ctx, packed, desc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	err = repo.Push(ctx, desc, bytes.NewReader(manifest))
	var referrersErr *remote.ReferrersError
	switch {
	case errors.As(err, &referrersErr) && referrersErr.IsReferrersIndexDelete():
		// A registry without the referrers API keeps a subject's
		// referrers in an index under a tag; adding one writes a new
		// index and deletes the old, which registries that refuse
		// deletes (405) do not allow. The signature and the new index
		// have landed; the old index is unreferenced garbage. oras
		// tolerates it the same way.
		c.logger().Warn("signature pushed; the registry refused to delete the previous referrers index, which stays as unreferenced garbage",
			"ref", r.String(), "signature", desc.Digest.String(), "error", referrersErr.Err)
	case err != nil && !errors.Is(err, errdef.ErrAlreadyExists):
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	return desc, nil
}

// Signatures returns the signature documents attached to subject as
// referrers (at most maxSignatures, each bounded and digest-verified).
func (c *Client) Signatures(ctx context.Context, r Ref, subject ocispec.Descriptor) ([][]byte, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return nil, err
	}
	var refs []ocispec.Descriptor
	err = repo.Referrers(ctx, subject, SignatureArtifact, func(d []ocispec.Descriptor) error {
		refs = append(refs, d...)
		if len(refs) > maxSignatures {
			return errTooMany
		}
		return nil
	})
	if errors.Is(err, errTooMany) {
		refs = refs[:maxSignatures]
	} else if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("list signatures of %s@%s: %w", r, subject.Digest, err)
	}
	var out [][]byte
	for _, d := range refs {
		if d.Size > maxManifestBytes {
			continue
		}
		raw, err := content.FetchAll(ctx, repo, d)
		if err != nil {
			return nil, fmt.Errorf("fetch signature %s of %s: %w", d.Digest, r, err)
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != SignatureArtifact ||
			m.Subject == nil || m.Subject.Digest != subject.Digest || m.Layers[0].Size > maxSignatureSize {
			continue // not ours, or malformed: it signs nothing
		}
		sig, err := content.FetchAll(ctx, repo, m.Layers[0])
		if err != nil {
			return nil, fmt.Errorf("fetch signature %s of %s: %w", d.Digest, r, err)
		}
		out = append(out, sig)
	}
	return out, nil
}

var errTooMany = errors.New("too many referrers")

// DigestOf is the sha256 digest of b, as a string.
func DigestOf(b []byte) string { return digest.FromBytes(b).String() }
