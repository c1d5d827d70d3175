package sdk

import (
	"encoding/json"
	"reflect"
	"sync"

	"github.com/agentanvil/anvil/sdk/internal/schema"
)

var schemaCache sync.Map // reflect.Type -> json.RawMessage; schemas are pure functions of the type

// SchemaOf returns the JSON Schema of C as the descriptor publishes it:
// inline (no $ref), no additional properties, and only fields tagged
// `jsonschema:"required"` required. Use jsonschema struct tags on C's
// fields to document and constrain them: description, title, default,
// enum, example, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf, minLength, maxLength, pattern, format, minItems, maxItems,
// uniqueItems=true, nullable (and a jsonschema_description tag); see the
// package documentation ("Config schemas") for the Go types and what each
// tag applies to. The schema is the one github.com/invopop/jsonschema wrote
// for these types and tags, byte for byte.
//
// SchemaOf panics, naming the type and field, on what it cannot describe
// exactly: another tag, a tag on a type it does not apply to, a malformed
// value, a recursive type, a func or channel field.
func SchemaOf[C any]() json.RawMessage {
	t := reflect.TypeFor[C]()
	if s, ok := schemaCache.Load(t); ok {
		return s.(json.RawMessage)
	}
	b, err := schema.Of(t)
	if err != nil {
		// A config type the reflector cannot describe is a programming error
		// in the kind, caught by its first test.
		panic("sdk: schema of " + t.String() + ": " + err.Error())
	}
	schemaCache.Store(t, json.RawMessage(b))
	return b
}
