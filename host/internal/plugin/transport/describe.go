package transport

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/agentanvil/anvil/abi"
)

var pluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// CheckDescriptor validates what anvil_describe returned against the ABI
// and against the module's exports, so a plugin that would fail on its
// first case fails at load instead, with a message naming what is wrong.
func CheckDescriptor(d *abi.Descriptor, exports map[string]bool) error {
	var errs []error
	if d.ABIMajor != abi.Major {
		errs = append(errs, fmt.Errorf("abi_major is %d but the module exports %s; this host speaks ABI v%d",
			d.ABIMajor, abi.ExportMarker, abi.Major))
	}
	if d.ABIMinor < 0 {
		errs = append(errs, fmt.Errorf("abi_minor is %d; want >= 0", d.ABIMinor))
	}
	if d.Name == "" {
		errs = append(errs, errors.New("name is empty"))
	} else if !pluginName.MatchString(d.Name) {
		errs = append(errs, fmt.Errorf("name %q: want lower case [a-z0-9_-]", d.Name))
	}
	if d.Version == "" {
		errs = append(errs, errors.New("version is empty"))
	}
	if len(d.Kinds) == 0 {
		errs = append(errs, errors.New("no kinds"))
	}
	seen := map[abi.Role]map[string]bool{abi.RoleMetric: {}, abi.RoleNode: {}}
	for i, k := range d.Kinds {
		where := fmt.Sprintf("kinds[%d] %q", i, k.Name)
		if k.Name == "" {
			errs = append(errs, fmt.Errorf("kinds[%d]: name is empty", i))
		}
		names, ok := seen[k.Role]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: role %q: want %q or %q", where, k.Role, abi.RoleMetric, abi.RoleNode))
			continue
		}
		if names[k.Name] {
			errs = append(errs, fmt.Errorf("%s: a %s kind of that name is already declared", where, k.Role))
		}
		names[k.Name] = true
		if len(k.ConfigSchema) > 0 {
			if _, err := CompileSchema(k.ConfigSchema); err != nil {
				errs = append(errs, fmt.Errorf("%s: config_schema: %v", where, err))
			}
		}
		need := abi.ExportMeasure
		if k.Role == abi.RoleNode {
			need = abi.ExportNode
		}
		if !exports[need] {
			errs = append(errs, fmt.Errorf("%s: a %s kind needs the export %s, which the module lacks", where, k.Role, need))
		}
		if k.Prepare && !exports[abi.ExportPrepare] {
			errs = append(errs, fmt.Errorf("%s: declares prepare but the module lacks the export %s", where, abi.ExportPrepare))
		}
		if k.Role == abi.RoleMetric && len(k.Verdicts) > 0 {
			errs = append(errs, fmt.Errorf("%s: a metric kind has no verdicts", where))
		}
		if k.Capabilities != nil && d.ABIMinor < 1 {
			errs = append(errs, fmt.Errorf("%s: capabilities per kind need abi_minor >= 1, the descriptor says %d", where, d.ABIMinor))
		}
		for _, c := range k.Capabilities {
			if !d.Asks(c) {
				errs = append(errs, fmt.Errorf("%s: asks for capability %q, which the plugin's capabilities %q lack; list every kind's capabilities at plugin level too (a host of ABI minor 0 reads only those)",
					where, c, d.Capabilities))
			}
		}
		dup := map[string]bool{}
		for _, v := range k.Verdicts {
			if v == "" || dup[v] {
				errs = append(errs, fmt.Errorf("%s: verdicts must be unique non-empty strings, got %q", where, k.Verdicts))
				break
			}
			dup[v] = true
		}
	}
	return errors.Join(errs...)
}

// LoadError is an abi.Error about a module that is not loaded yet, named
// by path and digest (its own name is not known, or not trusted, yet).
func LoadError(info Info, code abi.Code, format string, args ...any) error {
	e := abi.Errorf(code, format, args...)
	e.Plugin, e.Digest = info.Path, info.Digest
	return e
}
