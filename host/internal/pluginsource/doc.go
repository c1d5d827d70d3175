// Package pluginsource turns a configured plugin into what the trust
// policy and the plugin runtime need: a local module file with its pinned
// digest, the digest its signatures cover, the signature documents found,
// and — for an oci:// reference — the descriptor summary its manifest
// claims. It also writes anvil.lock (Lock) and builds the trust policy
// from the config (Policy).
//
// Invariants: a reference is loaded only as anvil.lock pins it, and every
// field of the lock entry is checked against the manifest it names; a tag
// that now resolves to another digest is an error naming both, unless the
// registry cannot be reached, in which case the lock and the cache alone
// serve (an offline run). Nothing is trusted from the cache without its
// digest: blobs are re-hashed on read and the runtime checks the module
// again before compiling it.
package pluginsource
