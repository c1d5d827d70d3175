package sdk

import (
	"encoding/json"
	"reflect"
	"sync"

	"github.com/invopop/jsonschema"
)

var schemaCache sync.Map // reflect.Type -> json.RawMessage; schemas are pure functions of the type

// SchemaOf returns the JSON Schema of C as the descriptor publishes it:
// inline (no $ref), no additional properties, and only fields tagged
// `jsonschema:"required"` required. Use jsonschema struct tags
// (description, enum, minimum, …) on C's fields to document them.
func SchemaOf[C any]() json.RawMessage {
	t := reflect.TypeFor[C]()
	if s, ok := schemaCache.Load(t); ok {
		return s.(json.RawMessage)
	}
	r := &jsonschema.Reflector{
		ExpandedStruct:             true,
		DoNotReference:             true,
		RequiredFromJSONSchemaTags: true,
		Anonymous:                  true,
	}
	s := r.ReflectFromType(t)
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	b, err := json.Marshal(s)
	if err != nil {
		// A config type the reflector cannot describe is a programming error
		// in the kind, caught by its first test.
		panic("sdk: schema of " + t.String() + ": " + err.Error())
	}
	schemaCache.Store(t, json.RawMessage(b))
	return b
}
