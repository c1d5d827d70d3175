package trust_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/trust"
)

func keyPair(t *testing.T, dir, name string) (trust.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	base := filepath.Join(dir, name)
	id, err := trust.GenerateKeyPair(base)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := trust.LoadPublicKey(base + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := trust.LoadPrivateKey(base + ".key")
	if err != nil {
		t.Fatal(err)
	}
	if pub.ID != id || trust.PrivateKeyID(priv) != id {
		t.Fatalf("key ids differ: %s %s %s", id, pub.ID, trust.PrivateKeyID(priv))
	}
	return pub, priv
}

func TestKeygenRefusesToOverwriteAndKeepsTheKeySecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyPair(t, dir, "a")
	if _, err := trust.GenerateKeyPair(filepath.Join(dir, "a")); err == nil {
		t.Error("a second keygen overwrote the key pair")
	}
	st, err := os.Stat(filepath.Join(dir, "a.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if _, err := trust.LoadPublicKey(filepath.Join(dir, "a.key")); err == nil || !strings.Contains(err.Error(), `want "PUBLIC KEY"`) {
		t.Errorf("a private key loaded as a public one: %v", err)
	}
}

const subject = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
const other = "sha256:2222222222222222222222222222222222222222222222222222222222222222"

func TestPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	teamA, privA := keyPair(t, dir, "team-a")
	_, privM := keyPair(t, dir, "mallory")
	sign := func(priv ed25519.PrivateKey, d string) []byte {
		b, err := trust.Sign(priv, d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	forged := func() []byte { // team A's key id over mallory's signature
		var s trust.Signature
		_ = json.Unmarshal(sign(privM, subject), &s)
		s.KeyID = teamA.ID
		b, _ := json.Marshal(s)
		return b
	}()
	judge := []abi.Capability{abi.CapJudge}
	noJudge := &trust.Policy{Publishers: []trust.Publisher{{Name: "team-a", Key: teamA}}}
	withJudge := &trust.Policy{Publishers: []trust.Publisher{{Name: "team-a", Key: teamA, Capabilities: judge}}}
	required := &trust.Policy{RequireAll: true, Publishers: noJudge.Publishers}
	for _, c := range []struct {
		name       string
		policy     *trust.Policy
		subject    trust.Subject
		wantSigner string
		wantRule   string
		wantReason string
	}{
		{"unsigned, nothing required", noJudge, trust.Subject{Plugin: "p", Digest: subject}, "unsigned", "", ""},
		{"unsigned, required globally", required, trust.Subject{Plugin: "p", Digest: subject}, "", "trust.require_signatures", "not signed"},
		{"unsigned, required for the plugin", noJudge, trust.Subject{Plugin: "p", Digest: subject, RequireSignature: true}, "", "plugins.p.require_signature", "not signed"},
		{"signed by team A", required, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{sign(privA, subject)}}, "team-a (" + teamA.ID + ")", "", ""},
		{"signed by an untrusted key", required, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{sign(privM, subject)}}, "", "trust.require_signatures", "not trusted publishers"},
		{"a signature of another digest", required, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{sign(privA, other)}}, "", "trust.require_signatures", "a signature of " + other},
		{"a forged key id", required, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{forged}}, "", "trust.require_signatures", "does not verify"},
		{"garbage", required, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{[]byte("{")}}, "", "trust.require_signatures", "no valid signature"},
		{"judge granted, publisher may not", noJudge, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{sign(privA, subject)}, Granted: judge}, "", "trust.publishers.team-a.capabilities", "the config grants judge, but team-a's plugins may be granted only: none"},
		{"judge granted, publisher may", withJudge, trust.Subject{Plugin: "p", Digest: subject, Signatures: [][]byte{sign(privA, subject)}, Granted: judge}, "team-a (" + teamA.ID + ")", "", ""},
		{"judge granted, not signed, not required", noJudge, trust.Subject{Plugin: "p", Digest: subject, Granted: judge}, "unsigned", "", ""},
	} {
		dec, err := c.policy.Check(c.subject)
		if c.wantRule == "" {
			if err != nil || dec.Signer() != c.wantSigner {
				t.Errorf("%s: %q, %v; want signer %q", c.name, dec.Signer(), err, c.wantSigner)
			}
			continue
		}
		var r *trust.Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s: %v, want a refusal", c.name, err)
			continue
		}
		if r.Rule != c.wantRule || !strings.Contains(r.Reason, c.wantReason) || r.Plugin != "p" || r.Digest != subject {
			t.Errorf("%s: %+v; want rule %s, reason with %q", c.name, r, c.wantRule, c.wantReason)
		}
		if msg := err.Error(); !strings.Contains(msg, "p@"+subject) || !strings.Contains(msg, "signer ") || !strings.Contains(msg, "rule "+c.wantRule) {
			t.Errorf("%s: message does not name plugin@digest, signer and rule: %s", c.name, msg)
		}
	}
}

// TestPolicyRequiresConformance: with trust.require_conformance, a plugin
// loads only with an attestation about it that passed and that a trusted
// publisher signed; its signer, not its claim, is what counts.
func TestPolicyRequiresConformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	teamA, privA := keyPair(t, dir, "team-a")
	_, privM := keyPair(t, dir, "mallory")
	const att = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	sign := func(priv ed25519.PrivateKey, d string) [][]byte {
		b, err := trust.Sign(priv, d)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{b}
	}
	policy := &trust.Policy{RequireConformance: true, Publishers: []trust.Publisher{{Name: "team-a", Key: teamA}}}
	passed := func(about string, sigs [][]byte) trust.Attestation {
		return trust.Attestation{Digest: att, Subject: about, Passed: true, Summary: "30 passed, 0 failed, 1 skipped by anvil-host v1", Signatures: sigs}
	}
	for _, c := range []struct {
		name         string
		attestations []trust.Attestation
		wantReason   string // "" accepts
	}{
		{"passed, signed by team A", []trust.Attestation{passed(subject, sign(privA, att))}, ""},
		{"none", nil, "no conformance attestation"},
		{"passed, signed by an untrusted key", []trust.Attestation{passed(subject, sign(privM, att))}, "not trusted publishers"},
		{"passed, unsigned", []trust.Attestation{passed(subject, nil)}, "is not signed"},
		{"passed, team A signed another document", []trust.Attestation{passed(subject, sign(privA, other))}, "no valid signature"},
		{"about another plugin", []trust.Attestation{passed(other, sign(privA, att))}, "is about " + other},
		{"failed, signed by team A", []trust.Attestation{{Digest: att, Subject: subject, Summary: "29 passed, 1 failed", Signatures: sign(privA, att)}}, "did not pass: 29 passed, 1 failed"},
		{"a forged one beside a good one", []trust.Attestation{passed(subject, sign(privM, att)), passed(subject, sign(privA, att))}, ""},
	} {
		dec, err := policy.Check(trust.Subject{Plugin: "p", Digest: subject, Attestations: c.attestations})
		if c.wantReason == "" {
			if err != nil || !strings.Contains(dec.Conformance, "30 passed") || !strings.Contains(dec.Conformance, "team-a") {
				t.Errorf("%s: %+v, %v; want accepted with team-a's attestation", c.name, dec, err)
			}
			continue
		}
		var r *trust.Refusal
		if !errors.As(err, &r) || r.Rule != "trust.require_conformance" || !strings.Contains(r.Reason, c.wantReason) {
			t.Errorf("%s: %v; want a trust.require_conformance refusal saying %q", c.name, err, c.wantReason)
		}
	}
	// A signature requirement still holds first.
	both := &trust.Policy{RequireAll: true, RequireConformance: true, Publishers: policy.Publishers}
	_, err := both.Check(trust.Subject{Plugin: "p", Digest: subject, Attestations: []trust.Attestation{passed(subject, sign(privA, att))}})
	var r *trust.Refusal
	if !errors.As(err, &r) || r.Rule != "trust.require_signatures" {
		t.Errorf("an unsigned plugin with a good attestation under require_signatures: %v", err)
	}
}

func TestSidecar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, priv := keyPair(t, dir, "k")
	mod := filepath.Join(dir, "m.wasm")
	if sigs, err := trust.ReadSidecar(mod); err != nil || sigs != nil {
		t.Errorf("no sidecar: %v, %v", sigs, err)
	}
	b, _ := trust.Sign(priv, subject)
	if err := os.WriteFile(trust.SidecarPath(mod), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if sigs, err := trust.ReadSidecar(mod); err != nil || len(sigs) != 1 {
		t.Errorf("sidecar: %d, %v", len(sigs), err)
	}
}

func FuzzParseSignature(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	good, _ := trust.Sign(priv, subject)
	f.Add(good)
	f.Add([]byte(`{"version":1,"subject":"sha256:","key_id":"","signature":""}`))
	f.Add([]byte(`{"version":1} {}`))
	pub := trust.PublicKey{Key: priv.Public().(ed25519.PublicKey), ID: trust.PrivateKeyID(priv)}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := trust.ParseSignature(b)
		if err != nil {
			return
		}
		// Whatever parses verifies only for the subject it names.
		if s.Verify(pub, other) && s.Subject != other {
			t.Errorf("a signature of %s verified for %s", s.Subject, other)
		}
	})
}
