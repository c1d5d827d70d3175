package oci

// Media types of the artifacts Anvil pushes and accepts.
const (
	// WasmConfig is the config of a Wasm artifact (CNCF TAG Runtime layout).
	WasmConfig = "application/vnd.wasm.config.v0+json"
	// WasmLayer is the module layer Anvil pushes.
	WasmLayer = "application/wasm"
	// WasmLayerLegacy is the older module layer type, accepted on pull.
	WasmLayerLegacy = "application/vnd.wasm.content.layer.v1+wasm"

	// ProcessConfig is the config of a native process plugin: its os/arch.
	ProcessConfig = "application/vnd.anvil.plugin.process.config.v1+json"
	// ProcessLayer is a native process plugin's executable.
	ProcessLayer = "application/vnd.anvil.plugin.process.binary.v1"

	// SignatureArtifact is the artifact type of a signature referrer and
	// the media type of its one layer (a trust.Signature in JSON).
	SignatureArtifact = "application/vnd.anvil.plugin.signature.v1+json"

	// ConformanceArtifact is the artifact type of a conformance
	// attestation referrer and the media type of its one layer (what
	// `plugin test` found, in JSON).
	ConformanceArtifact = "application/vnd.anvil.plugin.conformance.v1+json"
)

// Transports, as the config's plugins.x.transport names them.
const (
	TransportWasm    = "wasm"
	TransportProcess = "process"
)

// Annotation keys of the descriptor summary on a plugin manifest.
const (
	AnnotationName         = "dev.anvil.plugin.name"
	AnnotationVersion      = "dev.anvil.plugin.version"
	AnnotationABI          = "dev.anvil.plugin.abi"
	AnnotationKinds        = "dev.anvil.plugin.kinds"
	AnnotationCapabilities = "dev.anvil.plugin.capabilities"
	AnnotationTransport    = "dev.anvil.plugin.transport"
)

// Bounds on what is read from a registry before anything is parsed.
const (
	maxManifestBytes = 1 << 20
	maxConfigBytes   = 64 << 10
	maxSignatureSize = 64 << 10
	// maxConformanceSize bounds an attestation: a report of every check
	// and the descriptor's kinds and schemas.
	maxConformanceSize = 1 << 20
	// maxReferrers bounds the referrers of one type read per manifest.
	maxReferrers = 32
)
