package transport

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaLocation is the URL a plugin's schema is compiled under. It is in
// no scheme the host can open, so a relative $ref does not resolve to a
// file beside the working directory.
const schemaLocation = "mem://anvil/plugin/config-schema.json"

// CompileSchema compiles a JSON Schema a plugin published (a kind's
// config_schema) with no loader at all. The document is the whole
// schema: a $ref, $id or $schema pointing anywhere else — file:///etc/passwd,
// file:///dev/stdin, http://… — is a compile error, never a file read or a
// fetch; only the draft meta-schemas the library embeds resolve. Every
// place the host compiles a schema a plugin controls goes through here.
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("a JSON Schema is an object or a boolean")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaLocation)
}

// noLoader refuses every reference outside the schema document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference to %q outside the schema: plugin schemas are self-contained, the host loads nothing", url)
}
