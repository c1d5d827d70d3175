package schema

import (
	"bytes"
	"encoding/json"
)

// node is one JSON Schema (sub)schema. Its fields are the keywords the
// reflector can produce, declared in the order of invopop/jsonschema's
// Schema struct: encoding/json writes fields in declaration order, and the
// descriptor's bytes must stay what invopop wrote.
type node struct {
	Version              string      `json:"$schema,omitempty"`
	OneOf                []*node     `json:"oneOf,omitempty"`
	Items                *node       `json:"items,omitempty"`
	Properties           *properties `json:"properties,omitempty"`
	PatternProperties    patterns    `json:"patternProperties,omitempty"`
	AdditionalProperties *node       `json:"additionalProperties,omitempty"`
	Type                 string      `json:"type,omitempty"`
	Enum                 []any       `json:"enum,omitempty"`
	MultipleOf           json.Number `json:"multipleOf,omitempty"`
	Maximum              json.Number `json:"maximum,omitempty"`
	ExclusiveMaximum     json.Number `json:"exclusiveMaximum,omitempty"`
	Minimum              json.Number `json:"minimum,omitempty"`
	ExclusiveMinimum     json.Number `json:"exclusiveMinimum,omitempty"`
	MaxLength            *uint64     `json:"maxLength,omitempty"`
	MinLength            *uint64     `json:"minLength,omitempty"`
	Pattern              string      `json:"pattern,omitempty"`
	MaxItems             *uint64     `json:"maxItems,omitempty"`
	MinItems             *uint64     `json:"minItems,omitempty"`
	UniqueItems          bool        `json:"uniqueItems,omitempty"`
	Required             []string    `json:"required,omitempty"`
	Format               string      `json:"format,omitempty"`
	ContentEncoding      string      `json:"contentEncoding,omitempty"`
	Title                string      `json:"title,omitempty"`
	Description          string      `json:"description,omitempty"`
	Default              any         `json:"default,omitempty"`
	Examples             []any       `json:"examples,omitempty"`

	// isFalse makes the node the boolean schema false (a struct's
	// additionalProperties).
	isFalse bool
}

// patterns is patternProperties: a map, which encoding/json writes with its
// keys sorted, as invopop's map does.
type patterns map[string]*node

// empty reports whether n has no keyword: such a schema is written as
// true, as invopop writes its zero Schema.
func (n *node) empty() bool {
	return n.Version == "" && n.OneOf == nil && n.Items == nil && n.Properties == nil &&
		n.PatternProperties == nil && n.AdditionalProperties == nil && n.Type == "" &&
		n.Enum == nil && n.MultipleOf == "" && n.Maximum == "" && n.ExclusiveMaximum == "" &&
		n.Minimum == "" && n.ExclusiveMinimum == "" && n.MaxLength == nil && n.MinLength == nil &&
		n.Pattern == "" && n.MaxItems == nil && n.MinItems == nil && !n.UniqueItems &&
		n.Required == nil && n.Format == "" && n.ContentEncoding == "" && n.Title == "" &&
		n.Description == "" && n.Default == nil && n.Examples == nil && !n.isFalse
}

// MarshalJSON writes the boolean schemas as true and false, every other
// node as an object.
func (n *node) MarshalJSON() ([]byte, error) {
	if n.isFalse {
		return []byte("false"), nil
	}
	if n.empty() {
		return []byte("true"), nil
	}
	type plain node // the same fields without this method
	return json.Marshal((*plain)(n))
}

// properties is an object's properties in field order (encoding/json would
// sort a map's keys).
type properties struct {
	names []string
	nodes []*node
}

// set adds a property, or replaces the schema of one already there and
// keeps its place, as invopop's ordered map does when an embedded struct
// repeats a name.
func (p *properties) set(name string, n *node) {
	for i, have := range p.names {
		if have == name {
			p.nodes[i] = n
			return
		}
	}
	p.names = append(p.names, name)
	p.nodes = append(p.nodes, n)
}

// MarshalJSON writes the properties as one object in order.
func (p *properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.nodes[i])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
