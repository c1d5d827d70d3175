package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// checkParams validates a metric's params against its kind's JSON Schema,
// naming file:line of the offending key where the YAML says it.
func checkParams(file string, params *yaml.Node, paramsJSON, schema []byte, what string) error {
	if len(schema) == 0 {
		return nil
	}
	// The schema is the plugin's: it is compiled with no loader, so no
	// $ref in it makes the host open a file or a URL.
	sch, err := plugin.CompileSchema(schema)
	if err != nil {
		return fmt.Errorf("%s: kind's config schema: %w", what, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(paramsJSON))
	if err != nil {
		return fmt.Errorf("%s: params: %w", what, err)
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return fmt.Errorf("%s: params: %w", what, verr)
	}
	var msgs []string
	for _, leaf := range leaves(ve) {
		line := params.Line
		if n := lookup(params, leaf.InstanceLocation); n != nil {
			line = n.Line
		}
		loc := "params"
		if len(leaf.InstanceLocation) > 0 {
			loc += "." + strings.Join(leaf.InstanceLocation, ".")
		}
		msgs = append(msgs, fmt.Sprintf("%s:%d: %s: %s: %s", file, line, what, loc, leafMessage(leaf)))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func leafMessage(ve *jsonschema.ValidationError) string {
	return ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))
}

// lookup follows a JSON pointer (as segments) through a YAML mapping.
func lookup(n *yaml.Node, path []string) *yaml.Node {
	for _, seg := range path {
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					next = n.Content[i+1]
					if len(path) == 1 {
						next = n.Content[i] // point at the key
					}
				}
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}
