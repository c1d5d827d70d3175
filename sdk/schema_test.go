package sdk_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	spin "github.com/agentanvil/anvil/bench/plugins/spin"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/plugins/content"
	"github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/internal/schema"
)

// invopopSchema is the schema SchemaOf wrote with invopop/jsonschema,
// configured as it was, before the SDK's own reflector replaced it.
func invopopSchema(t *testing.T, typ reflect.Type) string {
	t.Helper()
	r := &jsonschema.Reflector{
		ExpandedStruct:             true,
		DoNotReference:             true,
		RequiredFromJSONSchemaTags: true,
		Anonymous:                  true,
	}
	s := r.ReflectFromType(typ)
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("invopop, %s: %v", typ, err)
	}
	return string(b)
}

// configType is the C of a *sdk.MetricKind[C] or *sdk.NodeKind[C]: the
// pointer its Validate field takes.
func configType(t *testing.T, k sdk.Kind) reflect.Type {
	t.Helper()
	f, ok := reflect.TypeOf(k).Elem().FieldByName("Validate")
	if !ok {
		t.Fatalf("kind %T has no Validate field", k)
	}
	return f.Type.In(0).Elem()
}

// TestFirstPartyConfigSchemasAreInvopops: every kind of every first-party
// plugin that links the SDK publishes the config schema invopop wrote.
func TestFirstPartyConfigSchemasAreInvopops(t *testing.T) {
	for name, p := range map[string]*sdk.Plugin{
		"geval": geval.Plugin(), "rag": rag.Plugin(), "dag": dag.Plugin(), "content": content.Plugin(), "agent": agent.Plugin(),
		"textcheck": textcheck.Plugin(), "spin": spin.Plugin(),
	} {
		if len(p.Kinds) == 0 {
			t.Fatalf("plugin %s has no kinds", name)
		}
		for _, k := range p.Kinds {
			d := k.Descriptor()
			t.Run(name+"/"+string(d.Role)+"/"+d.Name, func(t *testing.T) {
				want := invopopSchema(t, configType(t, k))
				if got := string(d.ConfigSchema); got != want {
					t.Errorf("config schema:\n got %s\nwant %s", got, want)
				}
			})
		}
	}
	// The SDK's own examples and tests.
	for _, typ := range []reflect.Type{reflect.TypeFor[matchConfig](), reflect.TypeFor[Config](), reflect.TypeFor[struct{}]()} {
		t.Run(typ.String(), func(t *testing.T) {
			if got, want := string(sdkSchemaOf(typ)), invopopSchema(t, typ); got != want {
				t.Errorf("config schema:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// sdkSchemaOf calls SchemaOf[C] for the C of typ, through a kind.
func sdkSchemaOf(typ reflect.Type) json.RawMessage {
	switch typ {
	case reflect.TypeFor[matchConfig]():
		return sdk.SchemaOf[matchConfig]()
	case reflect.TypeFor[Config]():
		return sdk.SchemaOf[Config]()
	}
	return sdk.SchemaOf[struct{}]()
}

// TestMainPackageConfigSchemasAreInvopops covers the plugins that are main
// packages (a test cannot import them): it reads each kind's config struct
// from the source, rebuilds it with reflect.StructOf (same fields, types
// and tags; only the type's name differs, which the schema does not show)
// and holds the reflector to invopop on it.
func TestMainPackageConfigSchemasAreInvopops(t *testing.T) {
	for _, file := range []string{
		"../examples/kwcov/go/main.go",
		"../host/internal/plugin/testdata/zoo/hostile/main.go",
		"../host/internal/plugin/testdata/zoo/judge/main.go",
		"../host/internal/plugin/testdata/native/main.go",
	} {
		types := kindConfigTypes(t, file)
		if len(types) == 0 {
			t.Fatalf("%s: no kind config types found", file)
		}
		for name, typ := range types {
			t.Run(filepath.Base(filepath.Dir(file))+"/"+name, func(t *testing.T) {
				got, err := schemaOfType(typ)
				if err != nil {
					t.Fatal(err)
				}
				if want := invopopSchema(t, typ); string(got) != want {
					t.Errorf("config schema:\n got %s\nwant %s", got, want)
				}
			})
		}
	}
}

// schemaOfType is SchemaOf for a type built at run time: SchemaOf[C] is
// schema.Of(C) behind a cache, and a StructOf type has no C to name.
func schemaOfType(typ reflect.Type) (json.RawMessage, error) {
	return schema.Of(typ)
}

// kindConfigTypes finds the C of every sdk.MetricKind[C] and
// sdk.NodeKind[C] in a Go file and rebuilds each struct with
// reflect.StructOf.
func kindConfigTypes(t *testing.T, file string) map[string]reflect.Type {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	structs := map[string]*ast.StructType{}
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if st, ok := ts.Type.(*ast.StructType); ok {
				structs[ts.Name.Name] = st
			}
		}
		return true
	})
	out := map[string]reflect.Type{}
	ast.Inspect(f, func(n ast.Node) bool {
		ix, ok := n.(*ast.IndexExpr)
		if !ok {
			return true
		}
		sel, ok := ix.X.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "MetricKind" && sel.Sel.Name != "NodeKind" {
			return true
		}
		id, ok := ix.Index.(*ast.Ident)
		if !ok {
			t.Fatalf("%s: kind config %s is not a type name", file, fset.Position(ix.Pos()))
		}
		st, ok := structs[id.Name]
		if !ok {
			t.Fatalf("%s: no struct type %s", file, id.Name)
		}
		out[id.Name] = structOf(t, file, st)
		return true
	})
	return out
}

func structOf(t *testing.T, file string, st *ast.StructType) reflect.Type {
	t.Helper()
	var fields []reflect.StructField
	for _, fl := range st.Fields.List {
		if len(fl.Names) == 0 {
			t.Fatalf("%s: embedded fields are not handled by this test", file)
		}
		var tag reflect.StructTag
		if fl.Tag != nil {
			s, err := strconv.Unquote(fl.Tag.Value)
			if err != nil {
				t.Fatalf("%s: tag %s: %v", file, fl.Tag.Value, err)
			}
			tag = reflect.StructTag(s)
		}
		for _, n := range fl.Names {
			if !n.IsExported() {
				t.Fatalf("%s: unexported field %s is not handled by this test", file, n.Name)
			}
			fields = append(fields, reflect.StructField{Name: n.Name, Type: goType(t, file, fl.Type), Tag: tag})
		}
	}
	return reflect.StructOf(fields)
}

// goType is the reflect.Type of a type expression made of predeclared
// types, slices, maps and pointers: what these configs hold.
func goType(t *testing.T, file string, e ast.Expr) reflect.Type {
	t.Helper()
	switch e := e.(type) {
	case *ast.Ident:
		if typ, ok := map[string]reflect.Type{
			"string": reflect.TypeFor[string](), "bool": reflect.TypeFor[bool](),
			"int": reflect.TypeFor[int](), "int64": reflect.TypeFor[int64](),
			"uint": reflect.TypeFor[uint](), "float64": reflect.TypeFor[float64](),
		}[e.Name]; ok {
			return typ
		}
	case *ast.ArrayType:
		if e.Len == nil {
			return reflect.SliceOf(goType(t, file, e.Elt))
		}
	case *ast.MapType:
		return reflect.MapOf(goType(t, file, e.Key), goType(t, file, e.Value))
	case *ast.StarExpr:
		return reflect.PointerTo(goType(t, file, e.X))
	}
	t.Fatalf("%s: field type %T is not handled by this test; extend goType", file, e)
	return nil
}

// TestSDKLinksNoSchemaLibrary: a plugin built on the SDK (a Wasm guest, or
// linked in-process) does not compile invopop/jsonschema or what it
// brought: Go's parser, a YAML library, and net in a Wasm guest.
func TestSDKLinksNoSchemaLibrary(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		pkgs []string
	}{
		{"host", nil, []string{"."}},
		{"wasip1", []string{"GOOS=wasip1", "GOARCH=wasm"}, []string{"./guest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("go", append([]string{"list", "-deps"}, tc.pkgs...)...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, pkg := range strings.Fields(string(out)) {
				switch {
				case strings.HasPrefix(pkg, "github.com/invopop/"), strings.HasPrefix(pkg, "go/"),
					strings.HasPrefix(pkg, "go.yaml.in/"), pkg == "net", pkg == "regexp":
					t.Errorf("the SDK links %s", pkg)
				}
			}
		})
	}
}

// TestSchemaOfPanicsNamingTheField: a tag the reflector cannot honour
// exactly (invopop ignored it) stops the kind's first test, naming the
// type and field.
func TestSchemaOfPanicsNamingTheField(t *testing.T) {
	type typo struct {
		Rounds int `json:"rounds" jsonschema:"minimum=1,maxItems=3"`
	}
	defer func() {
		p := recover()
		msg, _ := p.(string)
		want := "sdk: schema of sdk_test.typo: sdk_test.typo field Rounds: jsonschema keyword maxItems is not supported"
		if !strings.HasPrefix(msg, want) {
			t.Errorf("SchemaOf panicked with %v, want %q…", p, want)
		}
	}()
	sdk.SchemaOf[typo]()
}
