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
	desc, err := c.pushReferrer(ctx, r, subject, SignatureArtifact, sig)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push signature of %s: %w", r, err)
	}
	return desc, nil
}

// PushConformance stores doc (a conformance attestation in JSON: what
// `plugin test` found) as a referrer of the plugin manifest subject. The
// attestation is worth what its signature is: sign the returned manifest
// with PushSignature.
func (c *Client) PushConformance(ctx context.Context, r Ref, subject ocispec.Descriptor, doc []byte) (ocispec.Descriptor, error) {
	desc, err := c.pushReferrer(ctx, r, subject, ConformanceArtifact, doc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push conformance attestation of %s: %w", r, err)
	}
	return desc, nil
}

// pushReferrer stores doc as the one layer of a manifest of artifactType
// whose subject is subject.
func (c *Client) pushReferrer(ctx context.Context, r Ref, subject ocispec.Descriptor, artifactType string, doc []byte) (ocispec.Descriptor, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, err := oras.PushBytes(ctx, repo, artifactType, doc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	// The config's media type is the artifact type too: registries that
	// derive a referrer's artifact type from its config (as the OCI spec
	// allows when artifactType is absent) then agree with those that read
	// artifactType.
	cfg, err := oras.PushBytes(ctx, repo, artifactType, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	// Packed in memory first, so the manifest's descriptor is known even
	// when the push below ends with a tolerated error.
	packed := memory.New()
	desc, err := oras.PackManifest(ctx, packed, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &cfg,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: reproducibleCreated}})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	manifest, err := content.FetchAll(ctx, packed, desc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	err = repo.Push(ctx, desc, bytes.NewReader(manifest))
	var referrersErr *remote.ReferrersError
	switch {
	case errors.As(err, &referrersErr) && referrersErr.IsReferrersIndexDelete():
		// A registry without the referrers API keeps a subject's
		// referrers in an index under a tag; adding one writes a new
		// index and deletes the old, which registries that refuse
		// deletes (405) do not allow. The referrer and the new index
		// have landed; the old index is unreferenced garbage. oras
		// tolerates it the same way.
		c.logger().Warn("referrer pushed; the registry refused to delete the previous referrers index, which stays as unreferenced garbage",
			"ref", r.String(), "referrer", desc.Digest.String(), "artifact_type", artifactType, "error", referrersErr.Err)
	case err != nil && !errors.Is(err, errdef.ErrAlreadyExists):
		return ocispec.Descriptor{}, err
	}
	return desc, nil
}

// Signatures returns the signature documents attached to subject as
// referrers (at most maxReferrers, each bounded and digest-verified).
func (c *Client) Signatures(ctx context.Context, r Ref, subject ocispec.Descriptor) ([][]byte, error) {
	refs, err := c.referrers(ctx, r, subject, SignatureArtifact, maxSignatureSize)
	if err != nil {
		return nil, fmt.Errorf("signatures of %s@%s: %w", r, subject.Digest, err)
	}
	var out [][]byte
	for _, ref := range refs {
		out = append(out, ref.Doc)
	}
	return out, nil
}

// Referrer is a document attached to a manifest: the referrer's own
// manifest (what a signature of the document signs) and its one layer.
type Referrer struct {
	Manifest ocispec.Descriptor
	Doc      []byte
}

// Conformance returns the conformance attestations attached to subject
// (at most maxReferrers, each bounded and digest-verified). Nothing here
// says who made them: their signatures do (Signatures of each Manifest).
func (c *Client) Conformance(ctx context.Context, r Ref, subject ocispec.Descriptor) ([]Referrer, error) {
	refs, err := c.referrers(ctx, r, subject, ConformanceArtifact, maxConformanceSize)
	if err != nil {
		return nil, fmt.Errorf("conformance attestations of %s@%s: %w", r, subject.Digest, err)
	}
	return refs, nil
}

// referrers reads the referrers of subject of artifactType whose manifest
// is well formed (one layer of that type, the subject named, the layer at
// most maxDoc bytes): others are not ours, or malformed, and say nothing.
func (c *Client) referrers(ctx context.Context, r Ref, subject ocispec.Descriptor, artifactType string, maxDoc int64) ([]Referrer, error) {
	repo, err := c.Repository(r)
	if err != nil {
		return nil, err
	}
	var refs []ocispec.Descriptor
	err = repo.Referrers(ctx, subject, artifactType, func(d []ocispec.Descriptor) error {
		refs = append(refs, d...)
		if len(refs) > maxReferrers {
			return errTooMany
		}
		return nil
	})
	if errors.Is(err, errTooMany) {
		refs = refs[:maxReferrers]
	} else if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("list: %w", err)
	}
	var out []Referrer
	for _, d := range refs {
		if d.Size > maxManifestBytes {
			continue
		}
		raw, err := content.FetchAll(ctx, repo, d)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", d.Digest, err)
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != artifactType ||
			m.Subject == nil || m.Subject.Digest != subject.Digest || m.Layers[0].Size > maxDoc {
			continue
		}
		doc, err := content.FetchAll(ctx, repo, m.Layers[0])
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", d.Digest, err)
		}
		out = append(out, Referrer{Manifest: d, Doc: doc})
	}
	return out, nil
}

var errTooMany = errors.New("too many referrers")

// DigestOf is the sha256 digest of b, as a string.
func DigestOf(b []byte) string { return digest.FromBytes(b).String() }
