package abi_test

//go:generate go run ./internal/schemagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/abi/internal/schemagen/gen"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const regenerate = "regenerate with `go generate ./abi` (or `go run ./abi/internal/schemagen` from the module root)"

// schemaDir is gen.Dir as seen from this package's directory.
var schemaDir = filepath.FromSlash(strings.TrimPrefix(gen.Dir, "abi/"))

// TestSchemasUpToDate regenerates every schema in memory and compares it with
// the committed file, so a change to an abi type cannot ship without its schema.
func TestSchemasUpToDate(t *testing.T) {
	t.Parallel()
	files, err := gen.Generate()
	if err != nil {
		t.Fatalf("generating schemas: %v", err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Name] = true
		path := filepath.Join(schemaDir, f.Name)
		have, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("abi/%s is missing; %s", filepath.ToSlash(path), regenerate)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, f.Data) {
			t.Errorf("abi/%s is out of date with the abi Go types (first difference at line %d); %s",
				filepath.ToSlash(path), firstDiffLine(have, f.Data), regenerate)
		}
	}
	entries, err := os.ReadDir(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s/%s is not generated from any abi message; delete it or %s", gen.Dir, e.Name(), regenerate)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// compileSchemas compiles every committed schema, validating each against
// the draft 2020-12 metaschema on the way.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	for _, m := range gen.Messages {
		path := filepath.Join(schemaDir, m.Name+".json")
		doc := readJSON(t, path)
		id, _ := doc.(map[string]any)["$id"].(string)
		if want := gen.BaseID + m.Name + ".json"; id != want {
			t.Fatalf("%s: $id %q, want %q", path, id, want)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids[m.Name] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("%s/%s.json does not compile: %v", gen.Dir, name, err)
		}
		out[name] = s
	}
	return out
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func TestSchemasCompile(t *testing.T) {
	t.Parallel()
	compileSchemas(t)
}

// TestSchemasVersioned: the schemas live with the ABI major they describe
// (abi/v1/schema/, next to abi/v1/README.md), and every committed schema's
// $id names that major and is the raw URL of the file itself, so a v2
// schema can never be taken for a v1 one, by a validator or by a reader.
func TestSchemasVersioned(t *testing.T) {
	t.Parallel()
	major := fmt.Sprintf("/v%d/", abi.Major)
	if want := fmt.Sprintf("abi/v%d/schema", abi.Major); gen.Dir != want {
		t.Errorf("schemas are in %s; want %s, the directory of ABI major %d", gen.Dir, want, abi.Major)
	}
	paths, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(gen.Messages) {
		t.Errorf("%d schema files in %s; want one per message, %d", len(paths), gen.Dir, len(gen.Messages))
	}
	for _, path := range paths {
		id, _ := readJSON(t, path).(map[string]any)["$id"].(string)
		if !strings.Contains(id, major) {
			t.Errorf("%s: $id %q does not name ABI major %d (%s)", path, id, abi.Major, major)
		}
		if want := "/" + gen.Dir + "/" + filepath.Base(path); !strings.HasSuffix(id, want) {
			t.Errorf("%s: $id %q does not end in %s, the file's own path", path, id, want)
		}
	}
}

// vectors maps each golden vector file to its message: "measure_result.json"
// and "measure_result.error.json" are both measure_result vectors.
func vectors(t *testing.T) map[string]gen.Message {
	t.Helper()
	byName := map[string]gen.Message{}
	for _, m := range gen.Messages {
		byName[m.Name] = m
	}
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gen.Message{}
	for _, p := range paths {
		name, _, _ := strings.Cut(filepath.Base(p), ".")
		m, ok := byName[name]
		if !ok {
			t.Errorf("%s: no message named %q (vector files are <message>.json or <message>.<variant>.json)", p, name)
			continue
		}
		out[p] = m
	}
	return out
}

func TestEveryMessageHasAVector(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	for p, m := range vectors(t) {
		if filepath.Base(p) == m.Name+".json" {
			have[m.Name] = true
		}
	}
	for _, m := range gen.Messages {
		if !have[m.Name] {
			t.Errorf("no golden vector abi/testdata/%s.json", m.Name)
		}
	}
}

// TestGoldenVectors: every vector decodes strictly into its Go type,
// re-encodes to the same JSON, and is valid against its schema (and so is
// the re-encoding).
func TestGoldenVectors(t *testing.T) {
	t.Parallel()
	schemas := compileSchemas(t)
	for path, m := range vectors(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.New(m.Type)
			if err := decodeStrict(data, v.Interface()); err != nil {
				t.Fatalf("does not decode into abi.%s: %v", m.Type.Name(), err)
			}
			enc, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("re-encoding: %v", err)
			}
			if a, b := canonical(t, data), canonical(t, enc); a != b {
				t.Errorf("re-encoding differs from the vector (a field Go omits or renames?)\nvector:\n%s\nre-encoded:\n%s", a, b)
			}
			s := schemas[m.Name]
			for what, doc := range map[string][]byte{"vector": data, "re-encoding": enc} {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(inst); err != nil {
					t.Errorf("%s is not valid against %s/%s.json: %v", what, gen.Dir, m.Name, err)
				}
			}
		})
	}
}

// decodeStrict decodes exactly one JSON value with unknown fields disallowed.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// canonical renders a JSON document with sorted keys, fixed indentation and
// numbers compared by value.
func canonical(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVectorConfigSchemas: the config schemas in the descriptor vector and
// the reply schemas in the judge batch vector are themselves valid schemas.
func TestVectorConfigSchemas(t *testing.T) {
	t.Parallel()
	var d abi.Descriptor
	if err := decodeStrict(mustRead(t, "testdata/descriptor.json"), &d); err != nil {
		t.Fatal(err)
	}
	var b abi.JudgeBatch
	if err := decodeStrict(mustRead(t, "testdata/judge_batch.json"), &b); err != nil {
		t.Fatal(err)
	}
	raw := map[string]json.RawMessage{}
	for _, k := range d.Kinds {
		raw["kind "+k.Name] = k.ConfigSchema
	}
	for _, r := range b.Requests {
		raw["judge request "+r.SchemaName] = r.Schema
	}
	for name, s := range raw {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource("mem://schema.json", doc); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile("mem://schema.json"); err != nil {
			t.Errorf("%s: schema does not compile: %v", name, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpecCoversEveryField: the specification names every export, host
// function, error code and message field, so a field added to an abi type
// cannot go undocumented.
func TestSpecCoversEveryField(t *testing.T) {
	t.Parallel()
	spec := string(mustRead(t, "v1/README.md"))
	words := []string{
		abi.ExportMarker, abi.ExportDescribe, abi.ExportPrepare, abi.ExportMeasure, abi.ExportNode,
		abi.HostNamespace, abi.HostJudge, abi.HostLog, string(abi.CapJudge),
		string(abi.RoleMetric), string(abi.RoleNode),
		abi.ScoreWeighted, abi.ScoreRaw, abi.ScoreSampled,
	}
	for _, c := range allCodes {
		words = append(words, string(c))
	}
	words = append(words, abi.StandardFields...)
	seen := map[reflect.Type]bool{}
	for _, m := range gen.Messages {
		words = append(words, jsonNames(m.Type, seen)...)
	}
	slices.Sort(words)
	for _, w := range slices.Compact(words) {
		if !strings.Contains(spec, "`"+w+"`") {
			t.Errorf("abi/v1/README.md never mentions `%s`", w)
		}
	}
}

// jsonNames lists the JSON property names of struct t and of the structs it
// contains.
func jsonNames(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != "github.com/agentanvil/anvil/abi" {
		return nil
	}
	seen[t] = true
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, name)
		out = append(out, jsonNames(f.Type, seen)...)
	}
	return out
}

var allCodes = []abi.Code{
	abi.CodeMetric, abi.CodeInvalidConfig, abi.CodeMissingField, abi.CodeTrap, abi.CodeTimeout,
	abi.CodeABI, abi.CodeOutputTooLarge, abi.CodeBudget, abi.CodeCapability, abi.CodeJudge, abi.CodeCacheMiss,
}
