package abi

import "encoding/json"

// Descriptor is what anvil_describe returns: who the plugin is and what it
// offers and needs.
type Descriptor struct {
	// Name of the plugin, e.g. "geval": a letter or digit, then [a-z0-9_-].
	Name string `json:"name"`
	// Version of the plugin itself (semver), not of the ABI.
	Version string `json:"version"`
	// ABIMajor repeats the major of the marker export; a mismatch is an ABI violation.
	ABIMajor int `json:"abi_major"`
	// ABIMinor is the minor version the guest was built against.
	ABIMinor int `json:"abi_minor"`
	// Kinds the plugin provides.
	Kinds []KindDescriptor `json:"kinds"`
	// Capabilities the plugin asks for. Asking is not having: the operator grants.
	Capabilities []Capability `json:"capabilities,omitempty"`
}

// KindDescriptor describes one metric kind or node kind.
type KindDescriptor struct {
	// Name of the kind as used in configuration ("geval", "json_valid").
	Name string `json:"name"`
	// Role is "metric" or "node".
	Role Role `json:"role"`
	// Description is one line for humans.
	Description string `json:"description,omitempty"`
	// RequiredFields are the test-case fields every invocation needs
	// ("input", "actual_output", ... or a free-form field name). Fields that
	// depend on configuration are reported by the kind at measure time.
	RequiredFields []string `json:"required_fields,omitempty"`
	// ConfigSchema is a JSON Schema (draft 2020-12) of the kind's config object.
	ConfigSchema json.RawMessage `json:"config_schema,omitempty"`
	// Verdicts is the fixed verdict set of a node kind whose verdicts do not
	// come from configuration (a code gate: ["false","true"]). Empty for
	// metric kinds and for node kinds whose verdicts are configured.
	Verdicts []string `json:"verdicts,omitempty"`
	// Prepare is true when the kind implements anvil_prepare.
	Prepare bool `json:"prepare,omitempty,omitzero"`
	// Capabilities the kind asks for (ABI minor 1). nil (absent) means the
	// kind asks for what the plugin asks for (Descriptor.Capabilities), as
	// every kind of a minor-0 guest does; a non-nil list, even an empty
	// one, is the kind's own and replaces the plugin's. It must be a subset
	// of the plugin's list, so a host of minor 0, which reads only the
	// plugin's, grants what every kind needs.
	Capabilities []Capability `json:"capabilities,omitzero"`
}

// Kind returns the descriptor of the named kind, or false. A metric kind
// and a node kind may share a name (json_valid as a metric and as a gate);
// Kind then returns the first, and KindOf picks by role.
func (d Descriptor) Kind(name string) (KindDescriptor, bool) {
	for _, k := range d.Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return KindDescriptor{}, false
}

// KindOf returns the descriptor of the named kind in the given role.
func (d Descriptor) KindOf(name string, role Role) (KindDescriptor, bool) {
	for _, k := range d.Kinds {
		if k.Name == name && k.Role == role {
			return k, true
		}
	}
	return KindDescriptor{}, false
}

// KindAsks reports whether kind k asks for capability c: from its own
// list when it has one (ABI minor 1), else from the plugin's.
func (d Descriptor) KindAsks(k KindDescriptor, c Capability) bool {
	if k.Capabilities == nil {
		return d.Asks(c)
	}
	for _, have := range k.Capabilities {
		if have == c {
			return true
		}
	}
	return false
}

// Asks reports whether the descriptor asks for capability c at plugin
// level: whether some kind may use it. Which kind does is KindAsks.
func (d Descriptor) Asks(c Capability) bool {
	for _, have := range d.Capabilities {
		if have == c {
			return true
		}
	}
	return false
}
