// Package abi is Anvil's plugin ABI, version 1: the names a guest exports and
// imports, the JSON messages that cross the boundary, the error codes and the
// version constants.
//
// Invariants: this package depends on the standard library only, so any Go
// guest can import it; a field, once released, keeps its name, type and
// meaning. The major version lives in names (the marker export anvil_abi_v1),
// the minor version lives in data (Descriptor.ABIMinor) and only ever adds
// optional fields or optional exports. The specification a non-Go guest
// author reads is v1/README.md; JSON Schemas of every message are in
// v1/schema/, versioned with it.
package abi

// Version of the ABI this package describes.
//
// Minor 1 added KindDescriptor.Capabilities (per-kind capabilities).
// Minor 2 added JudgeRequest.OmitTokens (the caller reads the score only).
// Minor 3 added the optional export anvil_io (direct I/O in the guest's
// linear memory, v1/README.md §4.1).
// Minor 4 added the conversational TestCase fields (turns, scenario,
// expected_outcome, chatbot_role; v1/README.md §8.1).
// Minor 5 added the host function anvil_embed (embeddings through the
// judge layer, v1/README.md §3 and §7.8), gated by the judge capability.
const (
	Major = 1
	Minor = 5
)

// Exports a guest module provides. The marker is never called: its presence
// says which major version the guest speaks.
const (
	ExportMarker   = "anvil_abi_v1"
	ExportDescribe = "anvil_describe"
	ExportPrepare  = "anvil_prepare" // optional: metric kinds that do once-per-run work
	ExportMeasure  = "anvil_measure" // metric kinds
	ExportNode     = "anvil_node"    // node kinds
	// ExportIO is optional (minor 3): (size i32) -> i32, the address of the
	// guest's direct-I/O control block (v1/README.md §4.1).
	ExportIO = "anvil_io"
)

// MarkerPrefix is the prefix of every major version's marker export; a host
// that finds anvil_abi_v2 reports the major it found instead of "no marker".
const MarkerPrefix = "anvil_abi_v"

// Host functions, all in the Extism user namespace.
const (
	HostNamespace = "extism:host/user"
	HostJudge     = "anvil_judge" // JudgeBatch -> JudgeBatchResult
	HostLog       = "anvil_log"   // LogRecord -> nothing
	// HostEmbed (minor 5): EmbedRequest -> EmbedResult. A guest imports it
	// only when it embeds, so older hosts still load guests that do not.
	HostEmbed = "anvil_embed"
)

// Capability is a host service a plugin asks for in its descriptor and an
// operator grants in configuration. A service that is not granted is never
// reachable from the guest.
type Capability string

const (
	// CapJudge lets a guest send judge (LLM) requests through the host.
	CapJudge Capability = "judge"
)

// Role says whether a kind is a metric or a DAG node.
type Role string

const (
	RoleMetric Role = "metric"
	RoleNode   Role = "node"
)
