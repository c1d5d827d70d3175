// Package trust signs plugins and decides whether a plugin may load: ed25519
// key pairs (PEM: PKCS#8 private, PKIX public), signature documents over a
// digest, and the operator's trust policy (trusted publisher keys, which
// plugins must be signed, which capabilities each publisher's plugins may
// be granted).
//
// Invariants: a signature signs one digest — a plugin manifest's (which
// names the module layer and the descriptor annotations) or, for a local
// file, the module's — under a domain-separating prefix, so a signature
// for one thing is never valid for another. The policy is decided from
// digests, signatures and grants alone, before anything of the plugin is
// compiled or started; a refusal is a *Refusal naming the plugin, the
// digest, the signer and the rule. Keys and signatures are decoded
// strictly and bounded.
package trust
