package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
)

// AttestationVersion is the version of the Attestation document.
const AttestationVersion = 1

// Attestation is what `plugin publish` attaches to a plugin's manifest in
// a registry: the kit's report on the module that manifest names, with the
// descriptor it described. It is a claim by whoever signed it (a signature
// referrer of the attestation's own manifest), and only that: a host that
// requires conformance accepts one signed by a trusted publisher.
type Attestation struct {
	Version int `json:"version"`
	// Subject is the digest of the plugin manifest the attestation is
	// about; Module the digest of the module the kit ran.
	Subject   string `json:"subject"`
	Module    string `json:"module"`
	Transport string `json:"transport"`
	// Host is the anvil-host version whose kit ran.
	Host       string         `json:"host"`
	Plugin     string         `json:"plugin"`
	Descriptor abi.Descriptor `json:"descriptor"`
	Passed     int            `json:"passed"`
	Failed     int            `json:"failed"`
	Skipped    int            `json:"skipped"`
	Checks     []Result       `json:"checks"`
}

// OK reports whether the kit ran and no check failed.
func (a Attestation) OK() bool { return a.Failed == 0 && a.Passed > 0 }

// Summary is the attestation in one line: "23 passed, 0 failed, 2 skipped
// by anvil-host v0.9.0".
func (a Attestation) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped by anvil-host %s", a.Passed, a.Failed, a.Skipped, a.Host)
}

// Attest makes the attestation of rep, a run on the module pushed as the
// manifest subject, by host (a version).
func Attest(rep *Report, subject, host string) (Attestation, error) {
	if rep.Descriptor == nil {
		return Attestation{}, errors.New("the plugin did not load: nothing to attest")
	}
	return Attestation{Version: AttestationVersion, Subject: subject, Module: rep.Digest, Transport: rep.Transport,
		Host: host, Plugin: rep.Plugin, Descriptor: *rep.Descriptor,
		Passed: rep.Passed, Failed: rep.Failed, Skipped: rep.Skipped, Checks: rep.Results}, nil
}

// Marshal is the attestation as pushed.
func (a Attestation) Marshal() ([]byte, error) {
	return json.Marshal(a, json.Deterministic(true))
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseAttestation reads an attestation from a registry: strictly (no
// unknown or repeated member, valid UTF-8), with counts that agree with
// its checks, so a document cannot say "passed" over a failed check.
func ParseAttestation(b []byte) (Attestation, error) {
	var a Attestation
	if err := json.UnmarshalRead(bytes.NewReader(b), &a, json.RejectUnknownMembers(true)); err != nil {
		return Attestation{}, fmt.Errorf("conformance attestation: %w", err)
	}
	if a.Version != AttestationVersion {
		return Attestation{}, fmt.Errorf("conformance attestation: version %d, this host reads %d", a.Version, AttestationVersion)
	}
	if !digestRE.MatchString(a.Subject) || !digestRE.MatchString(a.Module) {
		return Attestation{}, errors.New("conformance attestation: subject and module must be sha256 digests")
	}
	var n [3]int
	for _, c := range a.Checks {
		switch c.Status {
		case Pass:
			n[0]++
		case Fail:
			n[1]++
		case Skip:
			n[2]++
		default:
			return Attestation{}, fmt.Errorf("conformance attestation: check %q has status %q", c.Name, c.Status)
		}
	}
	if n != [3]int{a.Passed, a.Failed, a.Skipped} {
		return Attestation{}, fmt.Errorf("conformance attestation: counts %d/%d/%d passed/failed/skipped, its checks %d/%d/%d",
			a.Passed, a.Failed, a.Skipped, n[0], n[1], n[2])
	}
	return a, nil
}
