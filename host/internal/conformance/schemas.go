package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentanvil/anvil/abi"
)

// schemas are the ABI's published JSON Schemas, compiled, by message
// name ("measure_result"), and its golden vectors by file name.
type schemas struct {
	byName  map[string]*jsonschema.Schema
	vectors map[string][]byte
}

func loadSchemas() (*schemas, error) {
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	files, err := fs.Glob(abi.Files, "v1/schema/*.json")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		raw, err := fs.ReadFile(abi.Files, f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("abi schema %s: %w", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			id = "mem://anvil/abi/" + path.Base(f)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("abi schema %s: %w", f, err)
		}
		ids[strings.TrimSuffix(path.Base(f), ".json")] = id
	}
	s := &schemas{byName: map[string]*jsonschema.Schema{}, vectors: map[string][]byte{}}
	for name, id := range ids {
		sch, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("abi schema %s: %w", name, err)
		}
		s.byName[name] = sch
	}
	vecs, err := fs.Glob(abi.Files, "testdata/*.json")
	if err != nil {
		return nil, err
	}
	for _, f := range vecs {
		raw, err := fs.ReadFile(abi.Files, f)
		if err != nil {
			return nil, err
		}
		s.vectors[path.Base(f)] = raw
	}
	return s, nil
}

// validate checks v (any Go value; it is encoded first) against the
// schema of message name.
func (s *schemas) validate(name string, v any) error {
	sch, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("no ABI schema named %s", name)
	}
	raw, ok := v.([]byte)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw = b
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := sch.Validate(doc); err != nil {
		return fmt.Errorf("not valid against abi/v1/schema/%s.json: %s", name, oneLine(err.Error()))
	}
	return nil
}

// vectorNames lists the golden vectors in name order.
func (s *schemas) vectorNames() []string {
	var names []string
	for n := range s.vectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// messageOf is the message a vector file is an example of:
// "measure_result.error.json" → "measure_result".
func messageOf(file string) string {
	base := strings.TrimSuffix(file, ".json")
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	return base
}
