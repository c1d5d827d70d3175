package judge

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonw"
)

// jsonStrings are strings whose encoding has edge cases: every escape
// encoding/json writes, invalid and truncated UTF-8, runes of every
// length, at every offset from a word boundary.
func jsonStrings() []string {
	base := []string{"", "plain ascii text", "\b\f\n\r\t", "\x00\x01\x1f\x7f ~", `"q" \ /`, "<b>a & b</b>",
		"\u2028\u2029", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaa", "\xe2\x80", "\xe2", "ünï 日本語 🙂",
		"\xff\xfe", "\xc0\x80", "\xed\xa0\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf0\x9f\x99", "a\xc3",
		"\xc3(", "\u00e9\u0301", "\ufffd", "\xef\xbf\xbd", "\u007f\u0080\u00ff"}
	var out []string
	for c := 0; c < 256; c++ {
		out = append(out, string([]byte{byte(c)}))
	}
	for _, s := range base {
		out = append(out, s)
		for pad := 1; pad < 17; pad++ {
			out = append(out, strings.Repeat("x", pad)+s, s+strings.Repeat("y", pad), strings.Repeat("z", pad)+s+s)
		}
	}
	return out
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings() {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonw.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestStringBodyJoins: the body of a+b is a's then b's when b begins with
// an ASCII byte, which requestBody relies on to reuse a message's escaping
// for the message with the schema instruction added.
func TestStringBodyJoins(t *testing.T) {
	strs := jsonStrings()
	for i, a := range strs {
		for _, b := range []string{"\n\nschema", "<", "x\xe2\x80\xa8", "\x00"} {
			b := b
			if i%7 == 0 {
				b = strs[(i*31)%len(strs)]
				if b == "" || b[0] >= utf8.RuneSelf {
					continue
				}
			}
			whole := jsonw.AppendStringBody(nil, a+b)
			parts := jsonw.AppendStringBody(jsonw.AppendStringBody(nil, a), b)
			if !bytes.Equal(whole, parts) {
				t.Errorf("%q + %q: %s apart, %s whole", a, b, parts, whole)
			}
		}
	}
}

func jsonFloats() []float64 {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.7, 0.1, 0.30000000000000004, 1e-6, 9.999999999999999e-7, 1e-7, -1e-7,
		1e20, 1e21, 9.999999999999999e20, -1e21, 1e100, 1e-100, 5e-324, math.SmallestNonzeroFloat64, math.MaxFloat64,
		-math.MaxFloat64, 123456789.125, 2.5e-10, 1e-9, 1.5e-10, 1e-10, 1e-300, 1 << 53, 1<<53 + 1, 12345678901234567890}
	for e := -30; e <= 30; e++ {
		fs = append(fs, math.Pow(10, float64(e)), 1.25*math.Pow(10, float64(e)), -3*math.Pow(10, float64(e)))
	}
	return fs
}

func TestAppendJSONFloat(t *testing.T) {
	for _, f := range jsonFloats() {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonw.Finite(f) {
			t.Fatalf("%v is finite", f)
		}
		if got := jsonw.AppendFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := json.Marshal(f); err == nil || jsonw.Finite(f) {
			t.Errorf("%v: json.Marshal error %v, finite %v; want an error, false", f, err, jsonw.Finite(f))
		}
	}
}

// rawDocs are JSON documents and near-misses: whitespace everywhere,
// characters compaction escapes, every kind of value and malformed ones.
var rawDocs = []string{
	`{"type":"object"}`, ` { "type" : "object" } `, "{\n\t\"a\":\r\n[1, 2 ,3]}", `{"a<b":"x & y > z"}`, "{\"d\":\"\u2028\u2029\xe2\x80\"}",
	`{"d":"\u2028 stays escaped text"}`, `[]`, `{}`, `[ ]`, `{ }`, `null`, ` true `, `false`, `0`, `-0`, `1.5e3`, `-1.25E-3`,
	`1e+5`, `"s"`, `"\"\\\/\b\f\n\r\t\u00e9"`, `[[[[]]]]`, `{"a":{"b":{"c":[null,true,false,"x",1.0]}}}`,
	"\"\xff\xfe invalid utf-8 is kept\"", `{"properties":{"a<b":{"description":"x & y \u2028","enum":[1.5e3,-0,"é"]}},"type":"object"}`,
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `truex`, `nul`, `[1 2]`,
	`"a` + "\n" + `b"`, `"\x"`, `"\u12"`, `"\u12g4"`, `{"a":1}x`, `{"a":1} {}`, `[1]]`, `"unterminated`, "\x00", `{"a":"<"`,
	"[\"\xe2\x80\xa8\"]", `"&&&&&&&&&&&&&&&&<<<<<<<<>>>>>>>>"`, "{\"k\xe2\x80\xa9\":\"v\"}",
}

func TestRawJSONForm(t *testing.T) {
	docs := append([]string(nil), rawDocs...)
	docs = append(docs, strings.Repeat("[", maxRawDepth)+strings.Repeat("]", maxRawDepth),
		strings.Repeat("[", maxRawDepth+1)+strings.Repeat("]", maxRawDepth+1), strings.Repeat("[", 20000)+strings.Repeat("]", 20000))
	for _, d := range docs {
		checkRawForm(t, []byte(d))
	}
	checkRawForm(t, nil)
	checkRawForm(t, []byte{})

	// A canonical schema with nothing to escape is written as it is.
	raw := []byte(`{"properties":{"score":{"type":"integer"}},"type":"object"}`)
	if out, ok := rawJSONForm(raw); !ok || &out[0] != &raw[0] {
		t.Errorf("a compact schema was copied (ok %v)", ok)
	}
}

// checkRawForm compares rawJSONForm with json.Marshal of a RawMessage:
// the same bytes when it is ok, and not ok whenever json.Marshal fails.
// Only too deep a document may be left to json.Marshal when it encodes.
func checkRawForm(t *testing.T, raw []byte) {
	t.Helper()
	want, err := json.Marshal(json.RawMessage(raw))
	got, ok := rawJSONForm(raw)
	switch {
	case ok && err != nil:
		t.Errorf("%q: ok, but json.Marshal fails: %v", raw, err)
	case ok && !bytes.Equal(got, want):
		t.Errorf("%q: got %s, want %s", raw, got, want)
	case !ok && err == nil && !tooDeep(raw):
		t.Errorf("%q: not ok, but json.Marshal writes %s", raw, want)
	}
}

// tooDeep reports raw nests more than maxRawDepth containers.
func tooDeep(raw []byte) bool {
	depth := 0
	for _, c := range raw {
		switch c {
		case '[', '{':
			depth++
			if depth > maxRawDepth {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// FuzzAppendJSON compares the string, float and raw-message appenders with
// json.Marshal.
func FuzzAppendJSON(f *testing.F) {
	for i, s := range rawDocs {
		f.Add(s, []byte(rawDocs[(i+1)%len(rawDocs)]), jsonFloats()[i%len(jsonFloats())])
	}
	f.Fuzz(func(t *testing.T, s string, raw []byte, x float64) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonw.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: got %s, want %s", s, got, want)
		}
		want, err = json.Marshal(x)
		if jsonw.Finite(x) != (err == nil) {
			t.Errorf("float %v: finite %v, json.Marshal error %v", x, jsonw.Finite(x), err)
		}
		if err == nil {
			if got := jsonw.AppendFloat(nil, x); !bytes.Equal(got, want) {
				t.Errorf("float %v: got %s, want %s", x, got, want)
			}
		}
		checkRawForm(t, raw)
		checkRawForm(t, []byte(s))
	})
}

// fieldShape is a struct field as json.Marshal sees it.
type fieldShape struct {
	name, tag string
	typ       reflect.Type
}

func shapeOf(v any) []fieldShape {
	t := reflect.TypeOf(v)
	var out []fieldShape
	for i := range t.NumField() {
		f := t.Field(i)
		out = append(out, fieldShape{f.Name, f.Tag.Get("json"), f.Type})
	}
	return out
}

// TestEncodedTypesKnown fails when a type the hand-written encoders write
// gains, loses or changes a field: the encoder (requestBody, cacheKey,
// appendScoreSpec) must learn it, or it would silently leave it out of
// the body or the key.
func TestEncodedTypesKnown(t *testing.T) {
	f64 := reflect.TypeFor[float64]()
	pf64 := reflect.TypeFor[*float64]()
	str, integer, boolean := reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[bool]()
	raw := reflect.TypeFor[json.RawMessage]()
	known := []struct {
		v    any
		want []fieldShape
	}{
		{abi.ScoreSpec{}, []fieldShape{{"Min", "min", integer}, {"Max", "max", integer}, {"Field", "field,omitempty", str},
			{"Samples", "samples,omitempty", integer}, {"SampleTemperature", "sample_temperature,omitempty", pf64}}},
		{abi.Message{}, []fieldShape{{"Role", "role", str}, {"Content", "content", str}}},
		{keyMaterial{}, []fieldShape{{"Version", "v", str}, {"Model", "model", str}, {"Messages", "messages", reflect.TypeFor[[]abi.Message]()},
			{"Schema", "schema,omitempty", raw}, {"SchemaName", "schema_name,omitempty", str},
			{"SchemaMode", "schema_mode,omitempty", reflect.TypeFor[schemaMode]()}, {"Strict", "strict,omitempty", boolean},
			{"Temperature", "temperature,omitempty", pf64}, {"MaxTokens", "max_tokens,omitempty", integer},
			{"TopLogprobs", "top_logprobs,omitempty", integer}, {"ReturnTokens", "return_tokens,omitempty", boolean},
			{"OmitTokens", "omit_tokens,omitempty", boolean}, {"Samples", "samples,omitempty", integer},
			{"SampleTemperature", "sample_temperature,omitempty", f64}, {"Score", "score,omitempty", reflect.TypeFor[*abi.ScoreSpec]()},
			{"NumberTokens", "number_tokens,omitempty", str}, {"Sample", "sample,omitempty", integer}}},
		{wireRequest{}, []fieldShape{{"Messages", "messages", reflect.TypeFor[[]wireMessage]()}, {"Model", "model,omitempty", str},
			{"Logprobs", "logprobs,omitempty", boolean}, {"MaxTokens", "max_tokens,omitempty", integer}, {"N", "n,omitempty", integer},
			{"Temperature", "temperature,omitempty", pf64}, {"TopLogprobs", "top_logprobs,omitempty", integer},
			{"ResponseFormat", "response_format,omitempty", reflect.TypeFor[*wireResponseFormat]()}}},
		{wireMessage{}, []fieldShape{{"Content", "content", str}, {"Role", "role", str}}},
		{wireResponseFormat{}, []fieldShape{{"JSONSchema", "json_schema,omitempty", reflect.TypeFor[*wireJSONSchema]()}, {"Type", "type", str}}},
		{wireJSONSchema{}, []fieldShape{{"Name", "name", str}, {"Strict", "strict,omitempty", boolean}, {"Schema", "schema", raw}}},
	}
	for _, k := range known {
		if got := shapeOf(k.v); !reflect.DeepEqual(got, k.want) {
			t.Errorf("%T changed: its fields are\n%v\nthe encoders know\n%v", k.v, got, k.want)
		}
	}
}
