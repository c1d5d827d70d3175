package schema_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/agentanvil/anvil/sdk/internal/schema"
)

// invopop is the schema sdk.SchemaOf wrote before the reflector: the
// reference every output here is held to, byte for byte.
func invopop(t reflect.Type) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("invopop panicked: %v", p)
		}
	}()
	r := &jsonschema.Reflector{
		ExpandedStruct:             true,
		DoNotReference:             true,
		RequiredFromJSONSchemaTags: true,
		Anonymous:                  true,
	}
	s := r.ReflectFromType(t)
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	return json.Marshal(s)
}

// sameAsInvopop fails unless schema.Of and invopop write the same bytes
// for t.
func sameAsInvopop(t *testing.T, typ reflect.Type) {
	t.Helper()
	want, err := invopop(typ)
	if err != nil {
		t.Fatalf("invopop, %s: %v", typ, err)
	}
	got, err := schema.Of(typ)
	if err != nil {
		t.Fatalf("schema.Of(%s): %v", typ, err)
	}
	if string(got) != string(want) {
		t.Errorf("schema.Of(%s):\n got %s\nwant %s", typ, got, want)
	}
}

type Inner struct {
	A string `json:"a" jsonschema:"required,minLength=1"`
	B int    `json:"b,omitempty"`
}

type embedded struct {
	E1 string `json:"e1" jsonschema:"required"`
	e2 string //nolint:unused // unexported: left out
}

type EmbeddedExported struct {
	X bool `json:"x,omitempty" jsonschema:"default=true"`
	A string
}

type Blob []byte

type Level int

type Names []string

type Table map[string]Level

type allKinds struct {
	Bool    bool
	Int     int
	Int8    int8
	Int16   int16
	Int32   int32
	Int64   int64
	Uint    uint
	Uint8   uint8
	Uint16  uint16
	Uint32  uint32
	Uint64  uint64
	Float32 float32
	Float64 float64
	String  string
	Level   Level
	Dur     time.Duration

	PString   *string
	PPInt     **int
	PStruct   *Inner
	Strings   []string
	Ints      []int
	Array     [3]int
	Bytes     []byte
	ByteArray [4]byte
	Blob      Blob
	Names     Names
	Nested    [][]string
	Structs   []Inner
	PStructs  []*Inner

	MapStringInt    map[string]int
	MapStringAny    map[string]any
	MapIntString    map[int]string
	MapInt64Any     map[int64]any
	MapUintString   map[uint]string
	MapRaw          map[string]json.RawMessage
	MapStruct       map[string]Inner
	MapPtrInterface map[string]*any
	Table           Table

	Struct    Inner
	Anonymous struct {
		Z float64 `json:"z"`
	}
	Empty      struct{}
	Raw        json.RawMessage
	Any        any
	Stringer   fmt.Stringer
	Time       time.Time
	PTime      *time.Time
	URL        url.URL
	IP         net.IP
	unexported int
}

type names struct {
	Plain      string
	Named      string `json:"named"`
	OmitEmpty  string `json:"omit_empty,omitempty"`
	NameOnly   string `json:",omitempty"`
	Skipped    string `json:"-"`
	SkippedToo string `json:"-,"`
	NoSchema   string `jsonschema:"-"`
	NoSchema2  string `jsonschema:"-,required"`
	Weird      string `json:"a<b>&c\u2028"`
	embedded
	*EmbeddedExported
	Named2   Inner  `json:"inner_named"`
	Inline   Inner  `json:"inline,inline"`
	InlineNS string `json:"inl,inline"`
	A        int    `json:"A" jsonschema:"required"` // replaces the embedded A in place
}

type asString struct {
	I  int     `json:"i,string" jsonschema:"minLength=1"`
	B  bool    `json:"b,omitempty,string" jsonschema:"default=x,enum=y"`
	F  float64 `json:"f,string"`
	S  string  `json:"s,string"`
	PI *int    `json:"pi,string" jsonschema:"pattern=^[0-9]+$"`
}

type tags struct {
	Req     string            `json:"req" jsonschema:"required"`
	Req2    string            `json:"req2" jsonschema:"minLength=2,required,"`
	Desc    string            `json:"desc" jsonschema:"description=one\\, two\\, three"`
	DescReq string            `json:"desc_req" jsonschema:"description=looks\\,required"`
	JSDesc  string            `json:"js_desc" jsonschema_description:"from the \"other\" tag <b>&amp;</b>"`
	Both    string            `json:"both" jsonschema_description:"loses" jsonschema:"description=wins"`
	Title   string            `json:"title" jsonschema:"title=The title,description=d=e"`
	Null    *string           `json:"null" jsonschema:"nullable,description=n"`
	NullS   Inner             `json:"null_s" jsonschema:"nullable,required"`
	NullRaw any               `json:"null_raw" jsonschema:"nullable"`
	Empty   string            `json:"empty" jsonschema:""`
	Comma   string            `json:"comma" jsonschema:",,required,"`
	StrAll  string            `json:"str_all" jsonschema:"minLength=1,maxLength=007,pattern=^a{1\\,3}$,format=email,default=x=y,example=e1,example=e2,enum=a,enum=b"`
	StrDup  string            `json:"str_dup" jsonschema:"minLength=1,minLength=3,default=a,default=b"`
	IntAll  int               `json:"int_all" jsonschema:"minimum=-5,maximum=10,exclusiveMinimum=-6,exclusiveMaximum=11,multipleOf=1,default=3,example=4,enum=1,enum=2,enum=3"`
	Float   float64           `json:"float" jsonschema:"minimum=0.5,maximum=1e3,default=-2.5E-3,enum=1.0,multipleOf=0.25"`
	Uint    uint16            `json:"uint" jsonschema:"minimum=0,maximum=65535"`
	BigInt  int64             `json:"big" jsonschema:"maximum=123456789012345678901234567890"`
	PInt    *int              `json:"p_int" jsonschema:"minimum=0,default=20"`
	BoolT   bool              `json:"bool_t" jsonschema:"default=true"`
	BoolF   *bool             `json:"bool_f" jsonschema:"default=false"`
	Arr     []string          `json:"arr" jsonschema:"required,minItems=1,maxItems=5,uniqueItems=true,default=a,default=b,format=uri,pattern=^h,minLength=3,maxLength=9,enum=x,enum=y,example=z"`
	ArrInt  []int             `json:"arr_int" jsonschema:"minItems=2,maxItems=2,minimum=0,maximum=10,enum=0,enum=10,multipleOf=2,example=4"`
	ArrF    []float64         `json:"arr_f" jsonschema:"exclusiveMinimum=0"`
	ArrBool []bool            `json:"arr_bool" jsonschema:"minItems=1"`
	ArrFix  [3]int            `json:"arr_fix" jsonschema:"minItems=1"`
	ArrPtr  []*string         `json:"arr_ptr" jsonschema:"minLength=1"`
	Bytes   []byte            `json:"bytes" jsonschema:"minLength=4,format=byte"`
	Time    time.Time         `json:"time" jsonschema:"format=date"`
	IP      net.IP            `json:"ip" jsonschema:"format=ipv6"`
	Nested  Inner             `json:"nested" jsonschema:"title=t,description=d,required"`
	Map     map[string]string `json:"map" jsonschema:"description=m"`
	Unicode string            `json:"unicode" jsonschema:"description=\u00e9\u2028\u2029 \x7f"`
}

type deep struct {
	L1 struct {
		L2 []struct {
			L3 map[string]*struct {
				V int `json:"v" jsonschema:"required,minimum=1"`
			} `json:"l3"`
		} `json:"l2" jsonschema:"minItems=1"`
	} `json:"l1"`
}

type Config struct{ N int } // the name a root type often has; see TestOfRefuses

// TestOfIsInvopops holds the reflector to invopop's bytes for every Go
// type and tag it supports.
func TestOfIsInvopops(t *testing.T) {
	t.Parallel()
	for _, typ := range []reflect.Type{
		reflect.TypeFor[allKinds](),
		reflect.TypeFor[*allKinds](),
		reflect.TypeFor[names](),
		reflect.TypeFor[asString](),
		reflect.TypeFor[tags](),
		reflect.TypeFor[deep](),
		reflect.TypeFor[Inner](),
		reflect.TypeFor[Config](),
		reflect.TypeFor[struct{}](),
		reflect.TypeFor[struct {
			Inner
			*EmbeddedExported
		}](),
		// Roots that are not structs.
		reflect.TypeFor[string](),
		reflect.TypeFor[*int](),
		reflect.TypeFor[[]string](),
		reflect.TypeFor[Names](),
		reflect.TypeFor[[2]Inner](),
		reflect.TypeFor[Blob](),
		reflect.TypeFor[map[string]Inner](),
		reflect.TypeFor[Table](),
		reflect.TypeFor[any](),
		reflect.TypeFor[json.RawMessage](),
		reflect.TypeFor[time.Time](),
		reflect.TypeFor[url.URL](),
		reflect.TypeFor[net.IP](),
	} {
		t.Run(typ.String(), func(t *testing.T) { sameAsInvopop(t, typ) })
	}
}

type recursive struct {
	Next *recursive `json:"next"`
}

type recursiveSlice struct {
	Children []recursiveSlice `json:"children"`
}

type recursiveEmbed struct {
	*recursiveEmbed
	N int
}

type recursiveMap map[string]recursiveMap

type hooked string

func (hooked) JSONSchemaExtend(any) {}

type hookedPtr struct{}

func (*hookedPtr) JSONSchema() any { return nil }

type embedsHooked struct {
	hookedPtr
}

// TestOfRefuses checks that what the reflector does not describe exactly
// as invopop did is an error naming the type and field, never a schema.
func TestOfRefuses(t *testing.T) {
	t.Parallel()
	type Outer struct {
		Inner Config `json:"inner"`
	}
	type Config struct { // a second Config: invopop wrote this one as the root
		Inner Outer
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want string // in the error, besides the root type
	}{
		{reflect.TypeFor[struct {
			F string `jsonschema:"foo=bar"`
		}](), `field F: jsonschema keyword foo is not supported on a field of JSON type "string"`},
		{reflect.TypeFor[struct {
			F string `jsonschema:"omitempty"`
		}](), `field F: jsonschema tag "omitempty" is not supported`},
		{reflect.TypeFor[struct {
			F []string `jsonschema:"uniqueItems"`
		}](), `field F: jsonschema tag "uniqueItems" is not supported`},
		{reflect.TypeFor[struct {
			F string `jsonschema:"type=integer"`
		}](), "field F: jsonschema keyword type is not supported"},
		{reflect.TypeFor[struct {
			F string `jsonschema:"oneof_required=a"`
		}](), "field F: jsonschema keyword oneof_required is not supported"},
		{reflect.TypeFor[struct {
			F string `jsonschema:"readOnly=true"`
		}](), "field F: jsonschema keyword readOnly is not supported"},
		{reflect.TypeFor[struct {
			F int `jsonschema:"minLength=1"`
		}](), `field F: jsonschema keyword minLength is not supported on a field of JSON type "integer"`},
		{reflect.TypeFor[struct {
			F int `jsonschema:"minimum=x"`
		}](), "field F: jsonschema keyword minimum=x: not a number"},
		{reflect.TypeFor[struct {
			F int `jsonschema:"minimum=+1"`
		}](), "field F: jsonschema keyword minimum=+1: not a number"},
		{reflect.TypeFor[struct {
			F float64 `jsonschema:"maximum=.5"`
		}](), "field F: jsonschema keyword maximum=.5: not a number"},
		{reflect.TypeFor[struct {
			F float64 `jsonschema:"maximum=NaN"`
		}](), "field F: jsonschema keyword maximum=NaN: not a number"},
		{reflect.TypeFor[struct {
			F int `jsonschema:"default=01"`
		}](), "field F: jsonschema keyword default=01: not a number"},
		{reflect.TypeFor[struct {
			F string `jsonschema:"minLength=-1"`
		}](), "field F: jsonschema keyword minLength=-1: not a count"},
		{reflect.TypeFor[struct {
			F []int `jsonschema:"minItems=two"`
		}](), "field F: jsonschema keyword minItems=two: not a count"},
		{reflect.TypeFor[struct {
			F []int `jsonschema:"uniqueItems=false"`
		}](), "field F: jsonschema keyword uniqueItems=false: the value must be true"},
		{reflect.TypeFor[struct {
			F []int `jsonschema:"default=1"`
		}](), "field F: jsonschema keyword default is supported on arrays of strings only"},
		{reflect.TypeFor[struct {
			F []bool `jsonschema:"default=true"`
		}](), "field F: jsonschema keyword default is supported on arrays of strings only"},
		{reflect.TypeFor[struct {
			F []string `jsonschema:"enum=a=b"`
		}](), "field F: jsonschema keyword enum=a=b: a value on an array field cannot contain '='"},
		{reflect.TypeFor[struct {
			F [][]string `jsonschema:"minLength=1"`
		}](), `field F: jsonschema keyword minLength is not supported on the items of an array field of JSON type "array"`},
		{reflect.TypeFor[struct {
			F []Inner `jsonschema:"minLength=1"`
		}](), `field F: jsonschema keyword minLength is not supported on the items of an array field of JSON type "object"`},
		{reflect.TypeFor[struct {
			F bool `jsonschema:"default=yes"`
		}](), "field F: jsonschema keyword default=yes: a boolean's default is true or false"},
		{reflect.TypeFor[struct {
			F bool `jsonschema:"enum=true"`
		}](), `field F: jsonschema keyword enum is not supported on a field of JSON type "boolean"`},
		{reflect.TypeFor[struct {
			F Inner `jsonschema:"default=x"`
		}](), `field F: jsonschema keyword default is not supported on a field of JSON type "object"`},
		{reflect.TypeFor[struct {
			F any `jsonschema:"enum=x"`
		}](), "field F: jsonschema keyword enum is not supported on a field of any JSON type"},
		{reflect.TypeFor[struct {
			F string `jsonschema_extras:"a=b"`
		}](), "field F: the jsonschema_extras tag is not supported"},
		{reflect.TypeFor[struct{ F func() }](), "field F: type func() (func) has no JSON Schema"},
		{reflect.TypeFor[struct{ F chan int }](), "field F: type chan int (chan) has no JSON Schema"},
		{reflect.TypeFor[struct{ F complex128 }](), "field F: type complex128 (complex128) has no JSON Schema"},
		{reflect.TypeFor[struct{ F uintptr }](), "field F: type uintptr (uintptr) has no JSON Schema"},
		{reflect.TypeFor[struct{ F struct{ G []chan int } }](), "field F.G: type chan int (chan) has no JSON Schema"},
		{reflect.TypeFor[recursive](), "field Next: type schema_test.recursive is recursive"},
		{reflect.TypeFor[recursiveSlice](), "field Children: type schema_test.recursiveSlice is recursive"},
		{reflect.TypeFor[recursiveEmbed](), "field recursiveEmbed: type schema_test.recursiveEmbed is recursive"},
		{reflect.TypeFor[struct{ M recursiveMap }](), "field M: type schema_test.recursiveMap is recursive"},
		{reflect.TypeFor[struct{ H hooked }](), "field H: type schema_test.hooked has a JSONSchemaExtend method"},
		{reflect.TypeFor[struct{ H []hookedPtr }](), "field H: type schema_test.hookedPtr has a JSONSchema method"},
		{reflect.TypeFor[embedsHooked](), "has a JSONSchema method"},
		{reflect.TypeFor[Config](), "field Inner.Inner: type schema_test.Config has the name of the root type schema_test.Config"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := schema.Of(tc.typ)
			if err == nil {
				t.Fatalf("schema.Of(%s) = %s, want an error", tc.typ, b)
			}
			if !strings.HasPrefix(err.Error(), tc.typ.String()) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("schema.Of(%s): error %q, want it to start with the type and contain %q", tc.typ, err, tc.want)
			}
		})
	}
}

// fieldKinds are the field types the tag tests put tags on.
var fieldKinds = []reflect.Type{
	reflect.TypeFor[string](),
	reflect.TypeFor[int](),
	reflect.TypeFor[float64](),
	reflect.TypeFor[bool](),
	reflect.TypeFor[*uint8](),
	reflect.TypeFor[[]string](),
	reflect.TypeFor[[]int](),
	reflect.TypeFor[[2]float32](),
	reflect.TypeFor[[]bool](),
	reflect.TypeFor[[]byte](),
	reflect.TypeFor[map[string]int](),
	reflect.TypeFor[Inner](),
	reflect.TypeFor[any](),
	reflect.TypeFor[time.Time](),
}

// withTags is a struct with one field of type ft and the given tags.
func withTags(ft reflect.Type, jsonTag, schemaTag string) reflect.Type {
	return reflect.StructOf([]reflect.StructField{
		{Name: "Other", Type: reflect.TypeFor[string](), Tag: `json:"other" jsonschema:"required"`},
		{Name: "F", Type: ft, Tag: reflect.StructTag("json:" + strconv.Quote(jsonTag) + " jsonschema:" + strconv.Quote(schemaTag))},
	})
}

// FuzzTags: whatever the tags, the reflector either refuses or writes
// invopop's bytes.
func FuzzTags(f *testing.F) {
	for _, seed := range []struct {
		kind            uint8
		jsonTag, schema string
	}{
		{0, "f", "required,minLength=1,description=a\\,b"},
		{1, "f,string", "minimum=0,maximum=10,default=3"},
		{2, "f,omitempty", "enum=1.5,enum=2e3,multipleOf=0.5"},
		{3, "", "default=true,nullable"},
		{5, "f", "minItems=1,uniqueItems=true,enum=a,default=b"},
		{6, "f", "minItems=2,maxItems=2,minimum=0"},
		{7, "f,inline", "maxItems=3"},
		{11, "", "title=x,description=y,required"},
		{12, "-", "minimum=1"},
		{13, "t", "format=date,pattern=^2"},
		{0, "f", "description=\\"},
		{0, "f", "\\,,\\,required"},
	} {
		f.Add(seed.kind, seed.jsonTag, seed.schema)
	}
	f.Fuzz(func(t *testing.T, kind uint8, jsonTag, schemaTag string) {
		typ := withTags(fieldKinds[int(kind)%len(fieldKinds)], jsonTag, schemaTag)
		got, err := schema.Of(typ)
		if err != nil {
			return // refused: allowed for any tag; TestGeneratedTags checks the supported ones are not
		}
		want, err := invopop(typ)
		if err != nil {
			t.Fatalf("schema.Of(%s) = %s, invopop: %v", typ, got, err)
		}
		if string(got) != string(want) {
			t.Fatalf("schema.Of(%s):\n got %s\nwant %s", typ, got, want)
		}
	})
}

// TestGeneratedTags builds random well-formed tags from the supported
// keywords for each field kind: the reflector must accept every one and
// write invopop's bytes.
func TestGeneratedTags(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 2026))
	values := []string{"", "a", "x y", "a=b", "<b>&</b>", "é\u2028", "1\\,2", `q"uote`, "back\\slash"}
	numbers := []string{"0", "-1", "3", "1.5", "-2.25", "1e3", "1E-2", "123456789012345678"}
	counts := []string{"0", "1", "2", "10", "007"}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	str := func(arrayItems bool) []string {
		v := pick(values)
		if arrayItems {
			v = strings.ReplaceAll(v, "=", "") // invopop dropped array keywords whose value holds '='
		}
		return []string{"minLength=" + pick(counts), "maxLength=" + pick(counts), "pattern=" + v,
			"format=" + v, "default=" + v, "example=" + v, "enum=" + v}
	}
	num := func(def bool) []string {
		kws := []string{"minimum=", "maximum=", "exclusiveMinimum=", "exclusiveMaximum=", "multipleOf=", "example=", "enum="}
		if def {
			kws = append(kws, "default=")
		}
		out := make([]string, len(kws))
		for i, k := range kws {
			out[i] = k + pick(numbers)
		}
		return out
	}
	kinds := []struct {
		typ      reflect.Type
		jsonTag  string
		keywords func() []string
	}{
		{reflect.TypeFor[string](), "f,omitempty", func() []string { return str(false) }},
		{reflect.TypeFor[*string](), "f", func() []string { return str(false) }},
		{reflect.TypeFor[int](), "f", func() []string { return num(true) }},
		{reflect.TypeFor[*int64](), "", func() []string { return num(true) }},
		{reflect.TypeFor[uint32](), "f", func() []string { return num(true) }},
		{reflect.TypeFor[float64](), "f", func() []string { return num(true) }},
		{reflect.TypeFor[int](), "f,string", func() []string { return str(false) }},
		{reflect.TypeFor[bool](), "f", func() []string { return []string{"default=" + pick([]string{"true", "false"})} }},
		{reflect.TypeFor[[]string](), "f", func() []string {
			return append(str(true), "minItems="+pick(counts), "maxItems="+pick(counts), "uniqueItems=true")
		}},
		{reflect.TypeFor[[]int](), "f", func() []string {
			return append(num(false), "minItems="+pick(counts), "maxItems="+pick(counts), "uniqueItems=true")
		}},
		{reflect.TypeFor[[3]float64](), "f", func() []string { return append(num(false), "minItems="+pick(counts)) }},
		{reflect.TypeFor[[]bool](), "f", func() []string { return []string{"maxItems=1", "minItems=1"} }},
		{reflect.TypeFor[Inner](), "f", func() []string { return nil }},
		{reflect.TypeFor[map[string]int](), "f", func() []string { return nil }},
		{reflect.TypeFor[any](), "f", func() []string { return nil }},
	}
	generic := func() []string {
		v := pick(values)
		return []string{"required", "nullable", "title=" + v, "description=" + v, ""}
	}
	for i := range 3000 {
		k := kinds[i%len(kinds)]
		all := append(k.keywords(), generic()...)
		var tag []string
		for range rng.IntN(6) {
			tag = append(tag, pick(all))
		}
		typ := withTags(k.typ, k.jsonTag, strings.Join(tag, ","))
		if t.Failed() {
			return
		}
		sameAsInvopop(t, typ)
	}
}
