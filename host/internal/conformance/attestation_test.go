package conformance_test

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/conformance"
)

const (
	manifestDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	moduleDigest   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func sampleReport() *conformance.Report {
	return &conformance.Report{Digest: moduleDigest, Transport: "wasm", Plugin: "textcheck@1.0.0",
		Descriptor: &abi.Descriptor{Name: "textcheck", Version: "1.0.0", ABIMajor: 1, Kinds: []abi.KindDescriptor{{Name: "exact_match", Role: abi.RoleMetric}}},
		Results:    []conformance.Result{{Name: "load", Status: conformance.Pass}, {Name: "kind", Status: conformance.Pass}, {Name: "x", Status: conformance.Skip}},
		Passed:     2, Skipped: 1}
}

// TestAttestationRoundTrip: what publish attaches reads back as the same
// claim, and OK only when the kit ran and nothing failed.
func TestAttestationRoundTrip(t *testing.T) {
	t.Parallel()
	a, err := conformance.Attest(sampleReport(), manifestDigest, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := conformance.ParseAttestation(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() || got.Subject != manifestDigest || got.Module != moduleDigest || got.Descriptor.Kinds[0].Name != "exact_match" ||
		got.Summary() != "2 passed, 0 failed, 1 skipped by anvil-host v1.2.3" {
		t.Errorf("read back %+v (%s)", got, got.Summary())
	}
	if _, err := conformance.Attest(&conformance.Report{Digest: moduleDigest}, manifestDigest, "v1"); err == nil {
		t.Error("a plugin that did not load was attested")
	}
}

// TestParseAttestationRefuses: a document from a registry is anyone's;
// it cannot claim a pass its own checks contradict, or smuggle members.
func TestParseAttestationRefuses(t *testing.T) {
	t.Parallel()
	a, _ := conformance.Attest(sampleReport(), manifestDigest, "v1")
	good, _ := a.Marshal()
	for _, c := range []struct{ name, doc, want string }{
		{"counts that lie", strings.Replace(string(good), `"failed":0`, `"failed":0,"x":1`, 1), "unknown"},
		{"a pass over a failed check", strings.Replace(string(good), `"status":"SKIP"`, `"status":"FAIL"`, 1), "counts 2/0/1"},
		{"an unknown status", strings.Replace(string(good), `"status":"SKIP"`, `"status":"OK"`, 1), `status "OK"`},
		{"another version", strings.Replace(string(good), `"version":1`, `"version":2`, 1), "version 2"},
		{"a subject that is no digest", strings.Replace(string(good), manifestDigest, "latest", 1), "sha256 digests"},
		{"a member twice", strings.Replace(string(good), `"version":1`, `"version":1,"version":1`, 1), "duplicate"},
		{"not JSON", "{", "attestation"},
	} {
		if _, err := conformance.ParseAttestation([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
	zero := strings.NewReplacer(`"passed":2`, `"passed":0`, `"skipped":1`, `"skipped":3`, `"status":"PASS"`, `"status":"SKIP"`).Replace(string(good))
	if got, err := conformance.ParseAttestation([]byte(zero)); err != nil || got.OK() {
		t.Errorf("an attestation where nothing ran: OK %v, %v; want read, not OK", got.OK(), err)
	}
}

func FuzzParseAttestation(f *testing.F) {
	a, _ := conformance.Attest(sampleReport(), manifestDigest, "v1")
	good, _ := a.Marshal()
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := conformance.ParseAttestation(b)
		if err != nil {
			return
		}
		n := map[conformance.Status]int{}
		for _, c := range got.Checks {
			n[c.Status]++
		}
		if n[conformance.Pass] != got.Passed || n[conformance.Fail] != got.Failed || n[conformance.Skip] != got.Skipped {
			t.Fatalf("accepted counts %d/%d/%d over checks %v", got.Passed, got.Failed, got.Skipped, n)
		}
		if got.OK() && got.Failed != 0 {
			t.Fatal("OK with a failed check")
		}
	})
}
