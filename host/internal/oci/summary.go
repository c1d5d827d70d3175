package oci

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Summary is the descriptor summary a plugin manifest carries in its
// annotations, so that `plugin ls`, `lock` and the trust policy can see
// what a plugin is and asks for without downloading its module. It is a
// claim by the publisher: the host re-reads the real descriptor from the
// module and refuses the plugin when they differ (Check).
type Summary struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	ABI          string   `json:"abi"`          // "MAJOR.MINOR"
	Kinds        []string `json:"kinds"`        // "role/name", sorted
	Capabilities []string `json:"capabilities"` // asked by the plugin or any kind, sorted
}

// SummaryOf summarises a descriptor.
func SummaryOf(d abi.Descriptor) Summary {
	s := Summary{Name: d.Name, Version: d.Version, ABI: fmt.Sprintf("%d.%d", d.ABIMajor, d.ABIMinor),
		Kinds: []string{}, Capabilities: []string{}}
	for _, k := range d.Kinds {
		s.Kinds = append(s.Kinds, string(k.Role)+"/"+k.Name)
		for _, c := range k.Capabilities {
			s.Capabilities = append(s.Capabilities, string(c))
		}
	}
	for _, c := range d.Capabilities {
		s.Capabilities = append(s.Capabilities, string(c))
	}
	slices.Sort(s.Kinds)
	slices.Sort(s.Capabilities)
	s.Capabilities = slices.Compact(s.Capabilities)
	return s
}

// Annotations are the manifest annotations that carry s.
func (s Summary) Annotations(transport string) map[string]string {
	return map[string]string{
		AnnotationName:                     s.Name,
		AnnotationVersion:                  s.Version,
		AnnotationABI:                      s.ABI,
		AnnotationKinds:                    strings.Join(s.Kinds, ","),
		AnnotationCapabilities:             strings.Join(s.Capabilities, ","),
		AnnotationTransport:                transport,
		"org.opencontainers.image.title":   s.Name,
		"org.opencontainers.image.version": s.Version,
	}
}

var plainValue = regexp.MustCompile(`^[A-Za-z0-9._+,/-]*$`)

// summaryFrom reads a summary back from manifest annotations; a missing
// key is an error (an artifact Anvil did not push, or one stripped).
func summaryFrom(a map[string]string) (Summary, error) {
	var missing []string
	get := func(k string) string {
		v, ok := a[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	}
	s := Summary{Name: get(AnnotationName), Version: get(AnnotationVersion), ABI: get(AnnotationABI),
		Kinds: splitList(get(AnnotationKinds)), Capabilities: splitList(get(AnnotationCapabilities))}
	if len(missing) > 0 {
		return Summary{}, fmt.Errorf("manifest lacks the descriptor annotations %s, which Anvil requires: the trust policy "+
			"decides from them before any of the plugin's code runs. A plain Wasm artifact (oras push, wkg) does not carry them; "+
			"push the module with `anvil-host plugin push MODULE.wasm oci://REGISTRY/REPO:TAG`, which reads its descriptor and writes them",
			strings.Join(missing, ", "))
	}
	// The values reach terminals (plugin ls, lock, messages): a registry
	// must not be able to send control sequences through them.
	for _, k := range []string{AnnotationName, AnnotationVersion, AnnotationABI, AnnotationKinds, AnnotationCapabilities} {
		if len(a[k]) > 4096 || !plainValue.MatchString(a[k]) {
			return Summary{}, fmt.Errorf("annotation %s holds characters outside [A-Za-z0-9._+,/-] or is over 4096 bytes", k)
		}
	}
	return s, nil
}

func splitList(v string) []string {
	out := []string{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// Check compares the summary a manifest claims with the descriptor the
// module gives when it is asked: a module that asks for a capability, or
// offers a kind, that its annotations do not declare was published with
// annotations that lie, and is refused — a policy decided on the
// annotations would otherwise not hold for the code.
func (s Summary) Check(real abi.Descriptor) error {
	got := SummaryOf(real)
	var diffs []string
	if !slices.Equal(got.Capabilities, s.Capabilities) {
		diffs = append(diffs, fmt.Sprintf("capabilities: annotations say [%s], the module asks for [%s]",
			strings.Join(s.Capabilities, ","), strings.Join(got.Capabilities, ",")))
	}
	if !slices.Equal(got.Kinds, s.Kinds) {
		diffs = append(diffs, fmt.Sprintf("kinds: annotations say [%s], the module offers [%s]",
			strings.Join(s.Kinds, ","), strings.Join(got.Kinds, ",")))
	}
	if got.ABI != s.ABI {
		diffs = append(diffs, fmt.Sprintf("abi: annotations say %s, the module speaks %s", s.ABI, got.ABI))
	}
	if got.Name != s.Name || got.Version != s.Version {
		diffs = append(diffs, fmt.Sprintf("name: annotations say %s@%s, the module is %s@%s", s.Name, s.Version, got.Name, got.Version))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the manifest's descriptor annotations do not match the module: %s", strings.Join(diffs, "; "))
	}
	return nil
}
