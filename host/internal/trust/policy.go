package trust

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Publisher is a trusted publisher: a name the operator chose, its key and
// the capabilities its plugins may be granted.
type Publisher struct {
	Name         string
	Key          PublicKey
	Capabilities []abi.Capability
}

// Policy is the operator's trust policy.
type Policy struct {
	// RequireAll requires every configured plugin to be signed by a
	// trusted publisher (trust.require_signatures).
	RequireAll bool
	// RequireConformance requires every plugin from a registry to carry
	// a passing conformance attestation signed by a trusted publisher
	// (trust.require_conformance).
	RequireConformance bool
	Publishers         []Publisher // by name
}

// Subject is what the policy decides on: one plugin, by config name, its
// signed digest, the signature documents found for it, and what the
// operator grants it.
type Subject struct {
	Plugin string
	Digest string
	// Signatures are the raw documents found (referrers or sidecar).
	Signatures [][]byte
	// Granted are the capabilities the operator grants the plugin.
	Granted []abi.Capability
	// RequireSignature is plugins.NAME.require_signature.
	RequireSignature bool
	// Attestations are the conformance attestations found for it.
	Attestations []Attestation
}

// Attestation is a conformance attestation found for a plugin, as the
// policy needs it: what it is about and says, and who signed it.
type Attestation struct {
	// Digest is the attestation's own manifest digest, what its
	// signatures sign.
	Digest string
	// Subject is the plugin manifest digest it is about.
	Subject string
	// Passed: the kit ran and no check failed; Summary says so in words.
	Passed  bool
	Summary string
	// Signatures are the raw signature documents of Digest.
	Signatures [][]byte
}

// Decision is an accepted plugin's signer; zero when it is unsigned (and
// no rule required a signature).
type Decision struct {
	Publisher string
	KeyID     string
	// Conformance is the accepted attestation's summary and signer, when
	// the policy required one.
	Conformance string
}

// Signer describes the decision for messages and the lockfile.
func (d Decision) Signer() string {
	if d.Publisher == "" {
		return "unsigned"
	}
	return d.Publisher + " (" + d.KeyID + ")"
}

// Refusal is the policy refusing a plugin.
type Refusal struct {
	Plugin, Digest, Signer, Rule, Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("plugin %s@%s refused by the trust policy: rule %s: signer %s: %s; nothing of it was compiled or started",
		r.Plugin, r.Digest, r.Rule, r.Signer, r.Reason)
}

// Check decides whether s may load. Every signature document is checked
// against the subject digest and the trusted keys; a required signature
// must come from a trusted publisher, and a signer's plugins may be
// granted only the capabilities its publisher entry lists.
func (p *Policy) Check(s Subject) (Decision, error) {
	d, err := p.checkSignatures(s)
	if err != nil || !p.RequireConformance {
		return d, err
	}
	d.Conformance, err = p.checkConformance(s)
	if err != nil {
		return Decision{}, err
	}
	return d, nil
}

// signers sorts the signatures of digest by who made them.
func (p *Policy) signers(sigs [][]byte, digest string) (trusted []Publisher, untrusted, bad []string) {
	for _, raw := range sigs {
		sig, err := ParseSignature(raw)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if sig.Subject != digest {
			bad = append(bad, fmt.Sprintf("a signature of %s, not of %s", sig.Subject, digest))
			continue
		}
		pub, known := p.byKeyID(sig.KeyID)
		switch {
		case !known:
			untrusted = append(untrusted, sig.KeyID)
		case sig.Verify(pub.Key, digest):
			trusted = append(trusted, pub)
		default:
			bad = append(bad, fmt.Sprintf("a signature claiming key %s (%s) that does not verify", sig.KeyID, pub.Name))
		}
	}
	return trusted, untrusted, bad
}

// checkConformance finds an attestation of s that passed, is about s and
// is signed by a trusted publisher; it returns its summary and signer.
func (p *Policy) checkConformance(s Subject) (string, error) {
	r := &Refusal{Plugin: s.Plugin, Digest: s.Digest, Rule: "trust.require_conformance", Signer: "none"}
	if len(s.Attestations) == 0 {
		r.Reason = "no conformance attestation (a registry plugin gets one from `anvil-host plugin publish`, which runs `plugin test` and attaches its signed result; a local file has none)"
		return "", r
	}
	var why []string
	for _, a := range s.Attestations {
		if a.Subject != s.Digest {
			why = append(why, fmt.Sprintf("attestation %s is about %s", a.Digest, a.Subject))
			continue
		}
		trusted, untrusted, bad := p.signers(a.Signatures, a.Digest)
		switch {
		case len(trusted) > 0 && a.Passed:
			return a.Summary + ", attested by " + trusted[0].Name + " (" + trusted[0].Key.ID + ")", nil
		case len(trusted) > 0:
			r.Signer = trusted[0].Name + " (" + trusted[0].Key.ID + ")"
			why = append(why, "attestation "+a.Digest+" did not pass: "+a.Summary)
		case len(untrusted) > 0:
			why = append(why, "attestation "+a.Digest+" is signed only by keys that are not trusted publishers: "+strings.Join(untrusted, ", "))
		case len(bad) > 0:
			why = append(why, "attestation "+a.Digest+" has no valid signature: "+strings.Join(bad, "; "))
		default:
			why = append(why, "attestation "+a.Digest+" is not signed")
		}
	}
	r.Reason = "no passing conformance attestation signed by a trusted publisher: " + strings.Join(why, "; ")
	return "", r
}

// checkSignatures is Check without the conformance rule.
func (p *Policy) checkSignatures(s Subject) (Decision, error) {
	trusted, untrusted, bad := p.signers(s.Signatures, s.Digest)
	rule := "trust.require_signatures"
	if s.RequireSignature {
		rule = "plugins." + s.Plugin + ".require_signature"
	}
	required := p.RequireAll || s.RequireSignature
	if len(trusted) == 0 {
		if !required {
			return Decision{}, nil
		}
		r := &Refusal{Plugin: s.Plugin, Digest: s.Digest, Rule: rule, Signer: "none"}
		switch {
		case len(untrusted) > 0:
			r.Signer = strings.Join(untrusted, ", ")
			r.Reason = "signed only by keys that are not trusted publishers (trust.publishers lists " + p.keyList() + ")"
		case len(bad) > 0:
			r.Reason = "no valid signature: " + strings.Join(bad, "; ")
		default:
			r.Reason = "not signed (no signature referrer in the registry, no .sig sidecar beside a local file)"
		}
		return Decision{}, r
	}
	// Any trusted signer whose publisher allows every granted capability
	// vouches for the plugin; otherwise the first one's rule refuses.
	for _, pub := range trusted {
		if missing := pub.disallowed(s.Granted); len(missing) == 0 {
			return Decision{Publisher: pub.Name, KeyID: pub.Key.ID}, nil
		}
	}
	pub := trusted[0]
	allowed := "none"
	if len(pub.Capabilities) > 0 {
		allowed = joinCaps(pub.Capabilities)
	}
	return Decision{}, &Refusal{Plugin: s.Plugin, Digest: s.Digest, Signer: pub.Name + " (" + pub.Key.ID + ")",
		Rule: "trust.publishers." + pub.Name + ".capabilities",
		Reason: fmt.Sprintf("the config grants %s, but %s's plugins may be granted only: %s",
			joinCaps(pub.disallowed(s.Granted)), pub.Name, allowed)}
}

func (pub Publisher) disallowed(granted []abi.Capability) []abi.Capability {
	var out []abi.Capability
	for _, c := range granted {
		if !slices.Contains(pub.Capabilities, c) {
			out = append(out, c)
		}
	}
	return out
}

func (p *Policy) byKeyID(id string) (Publisher, bool) {
	for _, pub := range p.Publishers {
		if pub.Key.ID == id {
			return pub, true
		}
	}
	return Publisher{}, false
}

func (p *Policy) keyList() string {
	if len(p.Publishers) == 0 {
		return "none"
	}
	var s []string
	for _, pub := range p.Publishers {
		s = append(s, pub.Name+"="+pub.Key.ID)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func joinCaps(cs []abi.Capability) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}
