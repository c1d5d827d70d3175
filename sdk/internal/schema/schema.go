// Package schema reflects a Go config type into the JSON Schema a kind's
// descriptor publishes. It writes, byte for byte, what
// github.com/invopop/jsonschema wrote for sdk.SchemaOf (a Reflector with
// ExpandedStruct, DoNotReference, RequiredFromJSONSchemaTags and
// Anonymous; $schema draft 2020-12), for the Go types and the
// `jsonschema` tag subset a config needs, and returns an error for
// anything else rather than a schema that might differ. invopop itself
// stays out of the SDK: it brought go/parser, go/doc, a YAML library and
// (in a Wasm guest) net into every plugin build (docs/RATIONALE.md).
//
// What it does, per Go type (pointers are their element's schema):
//
//	bool                              {"type":"boolean"}
//	int…, uint… (not uintptr)         {"type":"integer"}
//	float32, float64                  {"type":"number"}
//	string                            {"type":"string"}
//	[]byte                            {"type":"string","contentEncoding":"base64"}
//	[]T                               {"items":T,"type":"array"}
//	[N]T                              the same with minItems and maxItems N
//	map[K]V                           {"additionalProperties":V,"type":"object"};
//	                                  K an int kind: patternProperties "^[0-9]+$";
//	                                  V an interface: no additionalProperties
//	struct                            {"properties":…,"additionalProperties":false,
//	                                  "type":"object","required":[…]}
//	time.Time                         {"type":"string","format":"date-time"}
//	url.URL                           {"type":"string","format":"uri"}
//	net.IP                            {"type":"string","format":"ipv4"}
//	json.RawMessage, interfaces       true (anything)
//
// Struct fields: named by their json tag, else the Go name; unexported
// fields, `json:"-"` and `jsonschema:"-"` are left out; embedded structs
// (and pointers to structs) without a json name, and fields tagged
// `json:",inline"`, add their fields to the parent's; a field is required
// only when tagged `jsonschema:"required"` (omitempty does not matter);
// `jsonschema:"nullable"` makes it {"oneOf":[schema,{"type":"null"}]};
// `json:",string"` makes a number or boolean a string. A description comes
// from a `jsonschema_description` tag or `jsonschema:"description=…"`.
//
// The `jsonschema` tag's keywords (comma-separated; `\,` is a comma inside
// a value): title, description (any field); default, enum, example,
// minLength, maxLength, pattern, format (strings); default, enum, example,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (numbers);
// default=true|false (booleans); minItems, maxItems, uniqueItems=true
// (arrays), whose other keywords apply to the items, and default, format and
// pattern on arrays of strings. A keyword outside this list or that does not
// apply to the field's type, a malformed value, jsonschema_extras, a
// recursive type, a func, chan, complex or unsafe pointer, a type with a
// JSONSchema* hook method, or a nested type named like the root type is an
// error naming the type and field.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Version is the $schema of every root schema.
const Version = "https://json-schema.org/draft/2020-12/schema"

var (
	timeType       = reflect.TypeFor[time.Time]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	byteType       = reflect.TypeFor[byte]()
)

// Of returns the JSON Schema of t.
func Of(t reflect.Type) ([]byte, error) {
	if t == nil {
		return nil, fmt.Errorf("schema of a nil type")
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r := &reflector{root: t, open: map[reflect.Type]bool{}}
	n, err := r.typ(t)
	if err != nil {
		return nil, err
	}
	n.Version = Version
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema of %s: %w", t, err)
	}
	return b, nil
}

// maxPointers bounds the pointers followed to a type: `type P *P` has no end.
const maxPointers = 64

// reflector walks one root type.
type reflector struct {
	root reflect.Type
	// open holds the types being expanded, to refuse recursive types
	// (invopop recursed until the stack overflowed).
	open map[reflect.Type]bool
	// path is the field path from the root, for errors.
	path []string
}

// errorf is an error naming the root type and the field being reflected.
func (r *reflector) errorf(format string, args ...any) error {
	where := r.root.String()
	if len(r.path) > 0 {
		where += " field " + strings.Join(r.path, ".")
	}
	return fmt.Errorf("%s: "+format, append([]any{where}, args...)...)
}

// hook is the name of a method invopop would have called to let a type
// describe itself, if t (or *t) has one. The reflector does not call them,
// so such a type is refused rather than described differently. Each name
// is a constant at its call: the linker then keeps only methods of that
// name, where a variable name would keep every exported method of every
// type in the binary.
func hook(t reflect.Type) string {
	ts := []reflect.Type{t}
	if t.Kind() != reflect.Interface {
		ts = append(ts, reflect.PointerTo(t))
	}
	for _, t := range ts {
		if _, ok := t.MethodByName("JSONSchema"); ok {
			return "JSONSchema"
		}
		if _, ok := t.MethodByName("JSONSchemaAlias"); ok {
			return "JSONSchemaAlias"
		}
		if _, ok := t.MethodByName("JSONSchemaExtend"); ok {
			return "JSONSchemaExtend"
		}
		if _, ok := t.MethodByName("JSONSchemaProperty"); ok {
			return "JSONSchemaProperty"
		}
		if _, ok := t.MethodByName("GetFieldDocString"); ok {
			return "GetFieldDocString"
		}
		if _, ok := t.MethodByName("EnumDescriptor"); ok {
			return "EnumDescriptor"
		}
	}
	return ""
}

func (r *reflector) checkHooks(t reflect.Type) error {
	if name := hook(t); name != "" {
		return r.errorf("type %s has a %s method, which the SDK's schema reflector does not call", t, name)
	}
	return nil
}

// define notes a type invopop put in its definitions: one named like the
// root, nested under it, would have replaced the root schema.
func (r *reflector) define(t reflect.Type) error {
	if t != r.root && t.Name() != "" && t.Name() == r.root.Name() {
		return r.errorf("type %s has the name of the root type %s; rename one", t, r.root)
	}
	return nil
}

// enter marks t as being expanded; leave must follow.
func (r *reflector) enter(t reflect.Type) error {
	if r.open[t] {
		return r.errorf("type %s is recursive", t)
	}
	r.open[t] = true
	return nil
}

func (r *reflector) leave(t reflect.Type) { delete(r.open, t) }

// typ is the schema of a type, before its field's tags.
func (r *reflector) typ(t reflect.Type) (*node, error) {
	for i := 0; t.Kind() == reflect.Pointer; i++ {
		if i == maxPointers {
			return nil, r.errorf("type %s is a pointer to itself", t)
		}
		t = t.Elem()
	}
	if err := r.checkHooks(t); err != nil {
		return nil, err
	}
	if t.PkgPath() == "net" && t.Name() == "IP" {
		return &node{Type: "string", Format: "ipv4"}, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		switch {
		case t == timeType:
			return &node{Type: "string", Format: "date-time"}, nil
		case t.PkgPath() == "net/url" && t.Name() == "URL":
			return &node{Type: "string", Format: "uri"}, nil
		}
		if err := r.define(t); err != nil {
			return nil, err
		}
		if err := r.enter(t); err != nil {
			return nil, err
		}
		defer r.leave(t)
		n := &node{Type: "object", Properties: &properties{}, AdditionalProperties: &node{isFalse: true}}
		if err := r.fields(n, t); err != nil {
			return nil, err
		}
		return n, nil

	case reflect.Slice, reflect.Array:
		if t == rawMessageType {
			return &node{}, nil
		}
		if err := r.define(t); err != nil {
			return nil, err
		}
		n := &node{}
		if t.Kind() == reflect.Array {
			l := uint64(t.Len())
			n.MinItems, n.MaxItems = &l, &l
		}
		if t.Kind() == reflect.Slice && t.Elem() == byteType {
			n.Type, n.ContentEncoding = "string", "base64"
			return n, nil
		}
		if err := r.enter(t); err != nil {
			return nil, err
		}
		defer r.leave(t)
		items, err := r.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		n.Type, n.Items = "array", items
		return n, nil

	case reflect.Map:
		if err := r.define(t); err != nil {
			return nil, err
		}
		if err := r.enter(t); err != nil {
			return nil, err
		}
		defer r.leave(t)
		n := &node{Type: "object"}
		switch t.Key().Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v, err := r.typ(t.Elem())
			if err != nil {
				return nil, err
			}
			n.PatternProperties = patterns{"^[0-9]+$": v}
			n.AdditionalProperties = &node{isFalse: true}
			return n, nil
		}
		if t.Elem().Kind() != reflect.Interface {
			v, err := r.typ(t.Elem())
			if err != nil {
				return nil, err
			}
			n.AdditionalProperties = v
		}
		return n, nil

	case reflect.Interface:
		return &node{}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &node{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &node{Type: "number"}, nil
	case reflect.Bool:
		return &node{Type: "boolean"}, nil
	case reflect.String:
		return &node{Type: "string"}, nil
	}
	return nil, r.errorf("type %s (%s) has no JSON Schema", t, t.Kind())
}

// fields adds t's fields to the object n, and those of the structs t
// embeds.
func (r *reflector) fields(n *node, t reflect.Type) error {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil // `json:",inline"` on a field that is not a struct adds nothing
	}
	for i := range t.NumField() {
		if err := r.field(n, t.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// field adds one struct field to the object n.
func (r *reflector) field(n *node, f reflect.StructField) error {
	r.path = append(r.path, f.Name)
	defer func() { r.path = r.path[:len(r.path)-1] }()

	jsonTags := strings.Split(f.Tag.Get("json"), ",")
	if jsonTags[0] == "-" {
		return nil
	}
	schemaTag := f.Tag.Get("jsonschema")
	// invopop reads required, nullable and "-" from the tag split on every
	// comma, escaped or not.
	plainTags := strings.Split(schemaTag, ",")
	if plainTags[0] == "-" {
		return nil
	}
	if _, ok := f.Tag.Lookup("jsonschema_extras"); ok {
		return r.errorf("the jsonschema_extras tag is not supported")
	}
	required := has(plainTags, "required")
	nullable := has(plainTags, "nullable")

	embed := f.Anonymous && jsonTags[0] == "" &&
		(f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct)
	if embed || has(jsonTags[1:], "inline") {
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if err := r.checkHooks(et); err != nil {
			return err
		}
		if err := r.enter(et); err != nil {
			return err
		}
		defer r.leave(et)
		return r.fields(n, f.Type)
	}
	if !f.Anonymous && f.PkgPath != "" {
		return nil // unexported
	}
	name := f.Name
	if jsonTags[0] != "" {
		name = jsonTags[0]
	}

	prop, err := r.typ(f.Type)
	if err != nil {
		return err
	}
	if err := r.keywords(prop, f, splitOnUnescapedCommas(schemaTag), has(jsonTags[1:], "string")); err != nil {
		return err
	}
	if nullable {
		prop = &node{OneOf: []*node{prop, {Type: "null"}}}
	}
	n.Properties.set(name, prop)
	if required && !has(n.Required, name) {
		n.Required = append(n.Required, name)
	}
	return nil
}

// keywords applies a field's tags to its schema n.
func (r *reflector) keywords(n *node, f reflect.StructField, tags []string, asString bool) error {
	n.Description = f.Tag.Get("jsonschema_description")
	var rest []keyword
	for _, tag := range tags {
		name, val, ok := strings.Cut(tag, "=")
		if !ok {
			switch tag {
			case "", "required", "nullable":
				continue
			}
			return r.errorf("jsonschema tag %q is not supported (a keyword takes a value: name=value)", tag)
		}
		switch name {
		case "title":
			n.Title = val
		case "description":
			n.Description = val
		case "type", "anchor", "oneof_required", "anyof_required", "oneof_ref", "oneof_type", "anyof_ref", "anyof_type":
			return r.errorf("jsonschema keyword %s is not supported", name)
		default:
			rest = append(rest, keyword{name, val})
		}
	}
	switch n.Type {
	case "integer", "number", "boolean":
		if asString {
			n.Type = "string" // encoding/json's ",string" writes the value as a JSON string
		}
	}
	return r.typed(n, n.Type, rest, true)
}

// keyword is one name=value of a jsonschema tag.
type keyword struct{ name, val string }

// typed applies the keywords that depend on the schema's type. top is
// false for an array's items, which take what the array does not.
func (r *reflector) typed(n *node, typ string, kws []keyword, top bool) error {
	switch typ {
	case "string":
		for _, kw := range kws {
			switch kw.name {
			case "minLength", "maxLength":
				u, err := r.uint(kw)
				if err != nil {
					return err
				}
				if kw.name == "minLength" {
					n.MinLength = u
				} else {
					n.MaxLength = u
				}
			case "pattern":
				n.Pattern = kw.val
			case "format":
				n.Format = kw.val
			case "default":
				n.Default = kw.val
			case "example":
				n.Examples = append(n.Examples, kw.val)
			case "enum":
				n.Enum = append(n.Enum, kw.val)
			default:
				return r.inapplicable(kw, typ, top)
			}
		}
	case "integer", "number":
		for _, kw := range kws {
			switch kw.name {
			case "multipleOf", "minimum", "maximum", "exclusiveMaximum", "exclusiveMinimum", "default", "example", "enum":
			default:
				return r.inapplicable(kw, typ, top)
			}
			num, err := r.number(kw)
			if err != nil {
				return err
			}
			switch kw.name {
			case "multipleOf":
				n.MultipleOf = num
			case "minimum":
				n.Minimum = num
			case "maximum":
				n.Maximum = num
			case "exclusiveMaximum":
				n.ExclusiveMaximum = num
			case "exclusiveMinimum":
				n.ExclusiveMinimum = num
			case "default":
				n.Default = num
			case "example":
				n.Examples = append(n.Examples, num)
			case "enum":
				n.Enum = append(n.Enum, num)
			}
		}
	case "boolean":
		for _, kw := range kws {
			if kw.name != "default" {
				return r.inapplicable(kw, typ, top)
			}
			switch kw.val {
			case "true":
				n.Default = true
			case "false":
				n.Default = false
			default:
				return r.errorf("jsonschema keyword default=%s: a boolean's default is true or false", kw.val)
			}
		}
	case "array":
		return r.array(n, kws, top)
	default:
		for _, kw := range kws {
			return r.inapplicable(kw, typ, top)
		}
	}
	return nil
}

// array applies an array's keywords, and hands the others to its items.
func (r *reflector) array(n *node, kws []keyword, top bool) error {
	if !top {
		if len(kws) > 0 {
			// invopop did not say which level of a [][]T a keyword is for
			return r.inapplicable(kws[0], "array", top)
		}
		return nil
	}
	var defaults []any
	var rest []keyword
	for _, kw := range kws {
		if strings.Contains(kw.val, "=") {
			return r.errorf("jsonschema keyword %s=%s: a value on an array field cannot contain '='", kw.name, kw.val)
		}
		switch kw.name {
		case "minItems":
			u, err := r.uint(kw)
			if err != nil {
				return err
			}
			n.MinItems = u
		case "maxItems":
			u, err := r.uint(kw)
			if err != nil {
				return err
			}
			n.MaxItems = u
		case "uniqueItems":
			if kw.val != "true" {
				// invopop made any value true, uniqueItems=false too
				return r.errorf("jsonschema keyword uniqueItems=%s: the value must be true", kw.val)
			}
			n.UniqueItems = true
		case "default", "format", "pattern":
			if n.Items.Type != "string" {
				// invopop wrote an array default as strings whatever the
				// items, and format and pattern onto any items
				return r.errorf("jsonschema keyword %s is supported on arrays of strings only", kw.name)
			}
			switch kw.name {
			case "default":
				defaults = append(defaults, kw.val)
			case "format":
				n.Items.Format = kw.val
			case "pattern":
				n.Items.Pattern = kw.val
			}
		default:
			rest = append(rest, kw)
		}
	}
	if len(defaults) > 0 {
		n.Default = defaults
	}
	return r.typed(n.Items, n.Items.Type, rest, false)
}

func (r *reflector) inapplicable(kw keyword, typ string, top bool) error {
	what := "a field of JSON type " + strconv.Quote(typ)
	if typ == "" {
		what = "a field of any JSON type"
	}
	if !top {
		what = "the items of an array field of JSON type " + strconv.Quote(typ)
	}
	return r.errorf("jsonschema keyword %s is not supported on %s", kw.name, what)
}

// uint parses a count as invopop did; it dropped a malformed one.
func (r *reflector) uint(kw keyword) (*uint64, error) {
	u, err := strconv.ParseUint(kw.val, 10, 64)
	if err != nil {
		return nil, r.errorf("jsonschema keyword %s=%s: not a count", kw.name, kw.val)
	}
	return &u, nil
}

// number is a numeric keyword's value as invopop took it (what Go parses as
// an int64 or a float64), and only if it is also a JSON number: invopop
// dropped values Go cannot parse and failed to encode the others.
func (r *reflector) number(kw keyword) (json.Number, error) {
	v := kw.val
	_, ierr := strconv.ParseInt(v, 10, 64)
	_, ferr := strconv.ParseFloat(v, 64)
	if strings.Contains(v, "=") || ierr != nil && ferr != nil || !isJSONNumber(v) {
		return "", r.errorf("jsonschema keyword %s=%s: not a number", kw.name, v)
	}
	return json.Number(v), nil
}

// isJSONNumber reports whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	if s == "" || !(s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
		return false
	}
	return json.Valid([]byte(s))
}

func has(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}

// splitOnUnescapedCommas splits a jsonschema tag on the commas not
// preceded by a backslash, dropping that backslash, exactly as invopop did
// (an empty piece does not escape the next comma).
func splitOnUnescapedCommas(tag string) []string {
	separated := strings.Split(tag, ",")
	ret := []string{separated[0]}
	i := 0
	for _, next := range separated[1:] {
		if len(ret[i]) == 0 {
			ret = append(ret, next)
			i++
			continue
		}
		if ret[i][len(ret[i])-1] == '\\' {
			ret[i] = ret[i][:len(ret[i])-1] + "," + next
		} else {
			ret = append(ret, next)
			i++
		}
	}
	return ret
}
