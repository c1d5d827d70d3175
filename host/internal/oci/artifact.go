package oci

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Artifact is a plugin to push: its module (or executable) and the
// summary of its descriptor.
type Artifact struct {
	Module    []byte
	Transport string // TransportWasm or TransportProcess
	// OS and Arch of a process plugin's executable; the host's when empty.
	OS, Arch string
	Summary  Summary
}

// wasmConfig is the TAG Runtime Wasm config.
type wasmConfig struct {
	Architecture string   `json:"architecture"`
	OS           string   `json:"os"`
	LayerDigests []string `json:"layerDigests"`
}

// processConfig is the config of a native process plugin artifact.
type processConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// layout is the config blob, its media type and the layer media type of a.
func (a Artifact) layout() (config []byte, configType, layerType string, err error) {
	switch a.Transport {
	case TransportWasm, "":
		config, err = json.Marshal(wasmConfig{Architecture: "wasm", OS: "wasip1",
			LayerDigests: []string{digest.FromBytes(a.Module).String()}})
		return config, WasmConfig, WasmLayer, err
	case TransportProcess:
		c := processConfig{OS: a.OS, Architecture: a.Arch}
		if c.OS == "" {
			c.OS = runtime.GOOS
		}
		if c.Architecture == "" {
			c.Architecture = runtime.GOARCH
		}
		config, err = json.Marshal(c)
		return config, ProcessConfig, ProcessLayer, err
	}
	return nil, "", "", fmt.Errorf("transport %q: want %q or %q", a.Transport, TransportWasm, TransportProcess)
}

// Plugin is a plugin artifact's manifest, parsed and checked.
type Plugin struct {
	Manifest  ocispec.Descriptor
	Layer     ocispec.Descriptor
	Transport string
	OS, Arch  string
	Summary   Summary
}

// ParsePlugin checks a plugin manifest and its config blob: the bytes
// match the digests that name them, the media types are ones Anvil runs,
// there is exactly one layer, and the descriptor annotations are present.
// A process plugin built for another os/arch is refused here.
func ParsePlugin(desc ocispec.Descriptor, manifest, config []byte) (Plugin, error) {
	if got := digest.FromBytes(manifest); got != desc.Digest {
		return Plugin{}, fmt.Errorf("manifest bytes have digest %s, not %s", got, desc.Digest)
	}
	var m ocispec.Manifest
	dec := json.NewDecoder(bytes.NewReader(manifest))
	if err := dec.Decode(&m); err != nil {
		return Plugin{}, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return Plugin{}, fmt.Errorf("manifest %s: media type %q is not an OCI image manifest", desc.Digest, m.MediaType)
	}
	if got := digest.FromBytes(config); got != m.Config.Digest || int64(len(config)) != m.Config.Size {
		return Plugin{}, fmt.Errorf("manifest %s: config blob does not match its descriptor %s", desc.Digest, m.Config.Digest)
	}
	if len(m.Layers) != 1 {
		return Plugin{}, fmt.Errorf("manifest %s: %d layers; a plugin artifact has exactly one", desc.Digest, len(m.Layers))
	}
	p := Plugin{Manifest: desc, Layer: m.Layers[0]}
	switch m.Config.MediaType {
	case WasmConfig:
		var c wasmConfig
		if err := json.Unmarshal(config, &c); err != nil {
			return Plugin{}, fmt.Errorf("manifest %s: wasm config: %w", desc.Digest, err)
		}
		if c.Architecture != "wasm" || c.OS != "wasip1" {
			return Plugin{}, fmt.Errorf("manifest %s: wasm config says %s/%s; Anvil runs wasm/wasip1 modules", desc.Digest, c.OS, c.Architecture)
		}
		if p.Layer.MediaType != WasmLayer && p.Layer.MediaType != WasmLayerLegacy {
			return Plugin{}, fmt.Errorf("manifest %s: layer media type %q: want %s (or %s)", desc.Digest, p.Layer.MediaType, WasmLayer, WasmLayerLegacy)
		}
		p.Transport, p.OS, p.Arch = TransportWasm, c.OS, c.Architecture
	case ProcessConfig:
		var c processConfig
		if err := json.Unmarshal(config, &c); err != nil {
			return Plugin{}, fmt.Errorf("manifest %s: process config: %w", desc.Digest, err)
		}
		if p.Layer.MediaType != ProcessLayer {
			return Plugin{}, fmt.Errorf("manifest %s: layer media type %q: want %s", desc.Digest, p.Layer.MediaType, ProcessLayer)
		}
		if c.OS != runtime.GOOS || c.Architecture != runtime.GOARCH {
			return Plugin{}, fmt.Errorf("manifest %s: a process plugin for %s/%s cannot run on this %s/%s host", desc.Digest, c.OS, c.Architecture, runtime.GOOS, runtime.GOARCH)
		}
		p.Transport, p.OS, p.Arch = TransportProcess, c.OS, c.Architecture
	default:
		return Plugin{}, fmt.Errorf("manifest %s: config media type %q is not a plugin (want %s or %s)", desc.Digest, m.Config.MediaType, WasmConfig, ProcessConfig)
	}
	s, err := summaryFrom(m.Annotations)
	if err != nil {
		return Plugin{}, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	if t := m.Annotations[AnnotationTransport]; t != p.Transport {
		return Plugin{}, fmt.Errorf("manifest %s: transport annotation %q does not match its config type (%s)", desc.Digest, t, p.Transport)
	}
	p.Summary = s
	return p, nil
}
