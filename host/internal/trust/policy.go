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
	Publishers []Publisher // by name
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
}

// Decision is an accepted plugin's signer; zero when it is unsigned (and
// no rule required a signature).
type Decision struct {
	Publisher string
	KeyID     string
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
	var trusted []Publisher
	var untrusted, bad []string
	for _, raw := range s.Signatures {
		sig, err := ParseSignature(raw)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if sig.Subject != s.Digest {
			bad = append(bad, fmt.Sprintf("a signature of %s, not of %s", sig.Subject, s.Digest))
			continue
		}
		pub, known := p.byKeyID(sig.KeyID)
		switch {
		case !known:
			untrusted = append(untrusted, sig.KeyID)
		case sig.Verify(pub.Key, s.Digest):
			trusted = append(trusted, pub)
		default:
			bad = append(bad, fmt.Sprintf("a signature claiming key %s (%s) that does not verify", sig.KeyID, pub.Name))
		}
	}
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
