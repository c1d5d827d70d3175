package oci_test

import (
	"encoding/json"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/agentanvil/anvil/host/internal/oci"
)

// FuzzParsePlugin: whatever a registry serves as a manifest and config,
// ParsePlugin either refuses it or returns a plugin with one accepted
// layer type and a transport that matches it.
func FuzzParsePlugin(f *testing.F) {
	cfg := []byte(`{"architecture":"wasm","os":"wasip1"}`)
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config:      ocispec.Descriptor{MediaType: oci.WasmConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		Layers:      []ocispec.Descriptor{{MediaType: oci.WasmLayer, Digest: digest.FromString("m"), Size: 1}},
		Annotations: judgeSummary.Annotations(oci.TransportWasm)}
	raw, _ := json.Marshal(m)
	f.Add(raw, cfg)
	f.Add([]byte(`{"layers":[{},{}]}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, manifest, config []byte) {
		desc := ocispec.Descriptor{Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
		p, err := oci.ParsePlugin(desc, manifest, config)
		if err != nil {
			return
		}
		switch {
		case p.Transport == oci.TransportWasm && (p.Layer.MediaType == oci.WasmLayer || p.Layer.MediaType == oci.WasmLayerLegacy):
		case p.Transport == oci.TransportProcess && p.Layer.MediaType == oci.ProcessLayer:
		default:
			t.Errorf("accepted transport %q with layer %q", p.Transport, p.Layer.MediaType)
		}
	})
}
