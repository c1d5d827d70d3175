package judge

import (
	"encoding/json"
	"strconv"
)

// simpleSchema accepts replies for the small part of JSON Schema that
// every built-in metric's structured output uses — type, properties,
// required, additionalProperties, items, a string enum, an integer
// minimum and maximum — without the general validator, which allocated
// ≈ 26 times per reply and comparing numbers as big.Rat another ≈ 10, 9%
// of all the host's allocations at N=20,000.
//
// It only ever accepts: a reply it does not accept, for any reason, goes
// to jsonschema, which decides and words the problem exactly as before.
// So what matters is that it never accepts what jsonschema refuses
// (FuzzSimpleSchemaNeverAcceptsWhatJSONSchemaRefuses), and a schema with
// any keyword outside the subset, or a form of one it does not read
// (a number bound that is not an integer, an enum of non-strings, "items"
// as an array), has no simpleSchema at all.
type simpleSchema struct {
	types    uint8 // bits of the JSON types allowed; 0: any
	props    map[string]*simpleSchema
	required []string
	// closed: additionalProperties false. extra: the schema of the
	// members props does not name (nil: any value).
	closed bool
	extra  *simpleSchema
	items  *simpleSchema // nil: any item
	enum   []string      // non-nil: the value is one of these strings
	// min, max bound an integer value when hasMin, hasMax.
	min, max       int64
	hasMin, hasMax bool
}

const (
	typeObject = 1 << iota
	typeArray
	typeString
	typeInteger
	typeNumber
	typeBoolean
	typeNull
)

var schemaTypes = map[string]uint8{
	"object": typeObject, "array": typeArray, "string": typeString,
	"integer": typeInteger, "number": typeNumber, "boolean": typeBoolean, "null": typeNull,
}

// maxSimpleDepth bounds how deeply a schema nests for compileSimple to
// read it; deeper schemas (none a metric sends) stay with jsonschema.
const maxSimpleDepth = 16

// compileSimple reads doc, a schema as jsonschema.UnmarshalJSON decodes
// it, into a simpleSchema; nil when any part of it is outside the subset.
func compileSimple(doc any) *simpleSchema {
	return compileSimpleAt(doc, 0)
}

func compileSimpleAt(doc any, depth int) *simpleSchema {
	if depth > maxSimpleDepth {
		return nil
	}
	switch d := doc.(type) {
	case bool:
		if d {
			return &simpleSchema{}
		}
		return nil // false refuses everything: jsonschema words why
	case map[string]any:
		s := &simpleSchema{}
		for k, v := range d {
			if !s.read(k, v, depth) {
				return nil
			}
		}
		if s.enum != nil && s.types&^typeString != 0 {
			// An enum of strings under a type that also allows others is
			// still only strings; kept simple by refusing the mix.
			return nil
		}
		return s
	}
	return nil
}

// read takes one keyword of a schema object; false when it is outside
// the subset.
func (s *simpleSchema) read(key string, v any, depth int) bool {
	switch key {
	case "description", "title", "$comment", "default", "examples":
		return true // annotations: they do not assert anything
	case "type":
		switch t := v.(type) {
		case string:
			bit, ok := schemaTypes[t]
			s.types = bit
			return ok
		case []any:
			if len(t) == 0 {
				return false
			}
			for _, e := range t {
				name, ok := e.(string)
				bit := schemaTypes[name]
				if !ok || bit == 0 || s.types&bit != 0 {
					return false
				}
				s.types |= bit
			}
			return true
		}
		return false
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		s.props = make(map[string]*simpleSchema, len(m))
		for name, sub := range m {
			if s.props[name] = compileSimpleAt(sub, depth+1); s.props[name] == nil {
				return false
			}
		}
		return true
	case "required":
		var ok bool
		s.required, ok = stringList(v)
		return ok
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			s.closed = !b
			return true
		}
		s.extra = compileSimpleAt(v, depth+1)
		return s.extra != nil
	case "items":
		if _, isList := v.([]any); isList {
			return false
		}
		s.items = compileSimpleAt(v, depth+1)
		return s.items != nil
	case "enum":
		var ok bool
		s.enum, ok = stringList(v)
		return ok && len(s.enum) > 0
	case "minimum", "maximum":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		i, ok := plainInt(n)
		if !ok {
			return false
		}
		if key == "minimum" {
			s.min, s.hasMin = i, true
		} else {
			s.max, s.hasMax = i, true
		}
		return true
	}
	return false
}

// stringList reads a list of strings; false for anything else.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, str)
	}
	return out, true
}

// plainInt reads n when it is written as a plain integer (no fraction,
// no exponent) that fits an int64: a value whose integer-ness and order
// do not depend on how a validator reads decimals.
func plainInt(n json.Number) (int64, bool) {
	s := string(n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// accepts reports whether v, a value as jsonschema.UnmarshalJSON decodes
// JSON, certainly satisfies s. false is "not certain", never "invalid".
func (s *simpleSchema) accepts(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if !s.allows(typeObject) {
			return false
		}
		for _, name := range s.required {
			if _, ok := x[name]; !ok {
				return false
			}
		}
		for name, member := range x {
			sub, named := s.props[name]
			switch {
			case named:
				if !sub.accepts(member) {
					return false
				}
			case s.closed:
				return false
			case s.extra != nil:
				if !s.extra.accepts(member) {
					return false
				}
			}
		}
		return s.enum == nil && !s.hasMin && !s.hasMax
	case []any:
		if !s.allows(typeArray) || s.enum != nil || s.hasMin || s.hasMax {
			return false
		}
		if s.items != nil {
			for _, e := range x {
				if !s.items.accepts(e) {
					return false
				}
			}
		}
		return true
	case string:
		if !s.allows(typeString) || s.hasMin || s.hasMax {
			return false
		}
		if s.enum == nil {
			return true
		}
		for _, e := range s.enum {
			if e == x {
				return true
			}
		}
		return false
	case json.Number:
		if s.enum != nil {
			return false
		}
		i, isInt := plainInt(x)
		if !isInt {
			// A fraction or an exponent: integer or not, and in bounds or
			// not, is jsonschema's to say.
			return s.types == typeNumber && !s.hasMin && !s.hasMax
		}
		if !s.allows(typeInteger) && !s.allows(typeNumber) {
			return false
		}
		return (!s.hasMin || i >= s.min) && (!s.hasMax || i <= s.max)
	case bool:
		return s.allows(typeBoolean) && s.enum == nil && !s.hasMin && !s.hasMax
	case nil:
		return s.allows(typeNull) && s.enum == nil && !s.hasMin && !s.hasMax
	}
	return false
}

// allows reports whether a value of type bit passes s's "type".
func (s *simpleSchema) allows(bit uint8) bool { return s.types == 0 || s.types&bit != 0 }
