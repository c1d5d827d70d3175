package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// The cache key's bytes are what encoding/json made of the key material
// before the judge moved its JSON to go-json-experiment: a store keeps its
// hits across the change (no cacheKeyVersion bump). These tests hold the
// key to encoding/json's bytes for it (v1Key), and the canonical form of
// a schema, which the key and the request carry, to the one encoding/json
// made (v1Canonical).

// v1KeyMaterial is keyMaterial as encoding/json encoded it: the reference.
type v1KeyMaterial struct {
	Version           string          `json:"v"`
	Model             string          `json:"model"`
	Messages          []abi.Message   `json:"messages"`
	Schema            json.RawMessage `json:"schema,omitempty"`
	SchemaName        string          `json:"schema_name,omitempty"`
	SchemaMode        schemaMode      `json:"schema_mode,omitempty"`
	Strict            bool            `json:"strict,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	MaxTokens         int             `json:"max_tokens,omitempty"`
	TopLogprobs       int             `json:"top_logprobs,omitempty"`
	ReturnTokens      bool            `json:"return_tokens,omitempty"`
	OmitTokens        bool            `json:"omit_tokens,omitempty"`
	Samples           int             `json:"samples,omitempty"`
	SampleTemperature float64         `json:"sample_temperature,omitempty"`
	Score             *abi.ScoreSpec  `json:"score,omitempty"`
	NumberTokens      string          `json:"number_tokens,omitempty"`
	Sample            int             `json:"sample,omitempty"`
}

// v1Key is p's key material as encoding/json wrote it.
func (p *plan) v1Key(model string, omitTokens bool) ([]byte, error) {
	km := v1KeyMaterial{
		OmitTokens: omitTokens, Version: cacheKeyVersion, Model: model, Messages: p.req.Messages, SchemaMode: p.mode,
		Strict: p.strict, Temperature: p.temperature, MaxTokens: p.maxTokens, TopLogprobs: p.topLogprobs,
		ReturnTokens: p.returnTokens, Samples: p.samples, SampleTemperature: p.sampleTemperature, Score: p.score,
		NumberTokens: p.numberTokens, Sample: p.sample,
	}
	if p.schema != nil {
		km.Schema = p.schema.canonical
		km.SchemaName = p.schemaName
	}
	return json.Marshal(km)
}

// v1Canonical is canonicalJSON as it was: encoding/json's decode (with
// UseNumber) and its Encoder without HTML escaping.
func v1Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// sameJSON reports whether a and b are the same JSON value as
// encoding/json reads them, numbers as written.
func sameJSON(a, b []byte) bool {
	decode := func(b []byte) (any, error) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		return v, err
	}
	va, erra := decode(a)
	vb, errb := decode(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

// encodeInput is what a generated plan is made of.
type encodeInput struct {
	contents          [3]string
	roles             [3]string
	model, name       string
	field, numberToks string
	schema            []byte
	temp, sampleTemp  float64
	scoreTemp         float64
	flags             uint32
	ints              [4]int
}

// valid says every string of in is valid UTF-8: then the key's bytes are
// encoding/json's exactly.
func (in encodeInput) valid() bool {
	for _, s := range append(in.contents[:], in.roles[0], in.roles[1], in.roles[2], in.model, in.name, in.field, in.numberToks) {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// build makes the plan in. flags choose what is set; ints are token
// counts, samples and the sample index, any sign. A schema is in its
// canonical form, as resolve makes every plan's.
func (in encodeInput) build() *plan {
	bit := func(i int) bool { return in.flags>>i&1 == 1 }
	p := &plan{}
	for i := range 1 + int(in.flags&3)%3 {
		p.req.Messages = append(p.req.Messages, abi.Message{Role: in.roles[i], Content: in.contents[i]})
	}
	if bit(2) {
		p.req.Messages = nil
	}
	if bit(3) {
		if c, err := canonicalJSON(in.schema); err == nil {
			p.schema = &compiledSchema{canonical: c}
			p.schemaName = in.name
			p.mode = []schemaMode{modeJSONSchema, modeJSONObject, modePrompt, ""}[in.flags>>5&3]
			p.strict = bit(7)
		}
	}
	if bit(8) {
		t := in.temp
		p.temperature = &t
	}
	p.maxTokens, p.topLogprobs = in.ints[0], in.ints[1]
	p.returnTokens, p.omitTokens = bit(9), bit(10)
	if bit(11) {
		p.score = &abi.ScoreSpec{Min: in.ints[2], Max: in.ints[3], Field: in.field, Samples: in.ints[1] % 7}
		if bit(12) {
			t := in.scoreTemp
			p.score.SampleTemperature = &t
		}
	}
	if bit(13) {
		p.samples, p.sampleTemperature = in.ints[2]%9, in.sampleTemp
	}
	p.numberTokens = in.numberToks
	p.sample = in.ints[3] % 5
	return p
}

// checkKey requires the key material of in's plan to be encoding/json's:
// the same bytes when every string is valid UTF-8, else the same JSON
// value but for the invalid bytes' U+FFFD (written as the character, not
// as \ufffd); and an error exactly when encoding/json had one, which
// keyEncodes foresees.
func checkKey(t *testing.T, in encodeInput) {
	t.Helper()
	p := in.build()
	for _, omit := range []bool{false, true} {
		want, werr := p.v1Key(in.model, omit)
		got, gerr := p.keyJSON(in.model, omit)
		if (gerr == nil) != (werr == nil) || (gerr == nil) != p.keyEncodes() {
			t.Fatalf("key of %+v: error %v; encoding/json's %v; keyEncodes %v", in, gerr, werr, p.keyEncodes())
		}
		if gerr != nil {
			continue
		}
		if in.valid() {
			if !bytes.Equal(got, want) {
				t.Fatalf("key of %+v:\ngot  %s\nwant %s", in, got, want)
			}
			continue
		}
		if !sameJSON(got, want) {
			t.Fatalf("key of %+v:\ngot  %s\nwant %s", in, got, want)
		}
	}
}

// TestKeyBytesAreEncodingJSONs runs checkKey on generated plans over every
// field and the edge cases of strings and floats.
func TestKeyBytesAreEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	strs := jsonStrings()
	str := func() string {
		if rng.IntN(4) == 0 {
			return ""
		}
		return strs[rng.IntN(len(strs))] + strs[rng.IntN(len(strs))]
	}
	floats := append(jsonFloats(), math.NaN(), math.Inf(1), math.Inf(-1))
	float := func() float64 { return floats[rng.IntN(len(floats))] }
	roles := []string{"system", "user", "assistant", "tool", "", "<&>"}
	ints := []int{0, 1, -1, 20, 512, math.MaxInt, math.MinInt}
	n := 20000
	if testing.Short() {
		n = 4000
	}
	for range n {
		in := encodeInput{model: str(), name: schemaName(str()), field: str(), numberToks: str(),
			schema: []byte(jsonDocs[rng.IntN(len(jsonDocs))]), flags: rng.Uint32()}
		if rng.IntN(8) == 0 {
			in.name = str()
		}
		in.temp, in.sampleTemp, in.scoreTemp = float(), float(), float()
		for i := range in.contents {
			in.contents[i], in.roles[i] = str(), roles[rng.IntN(len(roles))]
		}
		for i := range in.ints {
			in.ints[i] = ints[rng.IntN(len(ints))]
		}
		checkKey(t, in)
	}
}

// TestCanonicalIsEncodingJSONs: a schema's canonical form, which the key
// and the request carry, is the one encoding/json made, for every
// document both read; the documents only encoding/json read repeat a
// name or hold invalid UTF-8.
func TestCanonicalIsEncodingJSONs(t *testing.T) {
	for _, doc := range jsonDocs {
		checkCanonical(t, []byte(doc))
	}
}

func checkCanonical(t *testing.T, doc []byte) {
	t.Helper()
	got, err := canonicalJSON(doc)
	if !json.Valid(doc) {
		// encoding/json's Decoder took some of these ("[1]]": a value and
		// a stray bracket); the schema was refused or, worse, cut.
		if err == nil {
			t.Fatalf("canonicalJSON(%q) = %q; the document is not JSON", doc, got)
		}
		return
	}
	want, werr := v1Canonical(doc)
	if werr != nil {
		t.Fatalf("encoding/json refused valid %q: %v", doc, werr)
	}
	if err != nil {
		if !strictRefusal(doc, err) {
			t.Fatalf("canonicalJSON(%q): %v; encoding/json made %q", doc, err, want)
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonicalJSON(%q) = %q; encoding/json made %q", doc, got, want)
	}
}

// strictRefusal says err is one of the refusals of JSON that
// encoding/json took: a repeated name, invalid UTF-8 or a lone surrogate
// escape, which it merged or replaced.
func strictRefusal(doc []byte, err error) bool {
	msg := err.Error()
	return !utf8.Valid(doc) || strings.Contains(msg, "duplicate") || strings.Contains(msg, "surrogate")
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, doc := range jsonDocs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCanonical(t, doc)
	})
}

// TestCacheKeysUnchanged pins the keys of a G-Eval request as the
// encoding/json encoder made them (computed at f5abdc0): a cache keeps
// its hits across the change of encoder.
func TestCacheKeysUnchanged(t *testing.T) {
	temp := 0.7
	p := &plan{req: gevalRequest(), temperature: &temp, maxTokens: 512, topLogprobs: 20, returnTokens: true,
		score: &abi.ScoreSpec{Min: 0, Max: 10, Field: "score"}, numberTokens: "digits", mode: modeJSONSchema, schemaName: "verdict"}
	canonical, err := canonicalJSON([]byte(verdictSchema))
	if err != nil {
		t.Fatal(err)
	}
	p.schema = &compiledSchema{canonical: canonical}
	for omit, want := range map[bool]string{
		false: "254059f933170e084c77791cfc7b48c9d10fbadef0f2a93bf7e9a3689a206b99",
		true:  "fa7673d32a1288119aa16c9b6eb6bcf7b0874476931fa605bf7bd7c356fc9ad0",
	} {
		if got, err := p.cacheKey("gpt-4o-mini", omit); err != nil || got != want {
			t.Errorf("omit %v: key %s (%v), was %s", omit, got, err, want)
		}
	}
}

// TestScoreSpecFieldsKnown fails when a type the key writes gains a
// field: abi.Message is written with its own tags, abi.ScoreSpec as
// keyScore, which must then say whether the new field belongs in the key
// (and if its bytes change, cacheKeyVersion with it).
func TestScoreSpecFieldsKnown(t *testing.T) {
	names := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Name+" "+rt.Field(i).Type.String()+" "+rt.Field(i).Tag.Get("json"))
		}
		return out
	}
	if got, want := names(abi.Message{}), []string{"Role string role", "Content string content"}; !reflect.DeepEqual(got, want) {
		t.Errorf("abi.Message changed: %v; the key knows %v", got, want)
	}
	spec := names(abi.ScoreSpec{})
	key := names(keyScore{})
	if len(spec) != len(key) {
		t.Fatalf("abi.ScoreSpec has fields %v; keyScore %v", spec, key)
	}
	for i := range spec {
		if strings.Fields(spec[i])[0] != strings.Fields(key[i])[0] {
			t.Errorf("abi.ScoreSpec has fields %v; keyScore %v", spec, key)
		}
	}
}

func fuzzInput(c0, c1, c2, role, model string, schema []byte, temp, sampleTemp float64, flags uint32, a, b int) encodeInput {
	in := encodeInput{contents: [3]string{c0, c1, c2}, roles: [3]string{"system", role, "user"}, model: model,
		name: schemaName(c2), field: role, numberToks: c1, schema: schema, temp: temp, sampleTemp: sampleTemp,
		scoreTemp: -temp, flags: flags, ints: [4]int{a, b, a - b, b - a}}
	if flags>>20&1 == 1 {
		in.name = c2
	}
	return in
}

// FuzzCacheKey: checkKey on plans from arbitrary contents (invalid UTF-8
// included), roles, models, floats, schema bytes and flags choosing every
// field.
func FuzzCacheKey(f *testing.F) {
	f.Add("You are a strict grader.", "Grade <this> & that \u2028", "\xff\xc3", "user", "gpt-4o-mini",
		[]byte(`{"type":"object","properties":{"score":{"type":"integer"}}}`), 0.7, 1.0, uint32(0xffff), 512, 20)
	f.Add("", "\x00\b\f\n\r\t\x1f\x7f", "a\xe2\x80\xa8b", "", "", []byte(" { \"a<b\" : [1, -0, 1e21] } "), 1e21, math.Copysign(0, -1), uint32(0x3f9a5), -1, 0)
	f.Add("x", "y", "z", "tool", "m<&>", []byte(`{"a":`), math.NaN(), math.Inf(-1), uint32(0xfffff), 0, 3)
	f.Add(string(bytes.Repeat([]byte("word & <tag> "), 300)), "ünï 日本語 🙂", "\xed\xa0\x80", "assistant", "\u2029",
		[]byte(nil), 1e-7, 5e-324, uint32(0x1a5a5), 7, -7)
	f.Fuzz(func(t *testing.T, c0, c1, c2, role, model string, schema []byte, temp, sampleTemp float64, flags uint32, a, b int) {
		in := fuzzInput(c0, c1, c2, role, model, schema, temp, sampleTemp, flags, a, b)
		in.flags |= 1<<8 | 1<<11 | 1<<13 // the key's floats
		checkKey(t, in)
	})
}

// jsonStrings are strings with everything encoding/json escapes or
// replaces, at every offset within a word.
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

// jsonFloats are floats at every edge of encoding/json's two formats.
func jsonFloats() []float64 {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.7, 0.1, 0.30000000000000004, 1e-6, 9.999999999999999e-7, 1e-7, -1e-7,
		1e20, 1e21, 9.999999999999999e20, -1e21, 1e100, 1e-100, 5e-324, math.SmallestNonzeroFloat64, math.MaxFloat64,
		-math.MaxFloat64, 123456789.125, 2.5e-10, 1e-9, 1.5e-10, 1e-10, 1e-300, 1 << 53, 1<<53 + 1, 12345678901234567890}
	for e := -30; e <= 30; e++ {
		fs = append(fs, math.Pow(10, float64(e)), 1.25*math.Pow(10, float64(e)), -3*math.Pow(10, float64(e)))
	}
	return fs
}

// jsonDocs are JSON documents, valid and not, in every spelling.
var jsonDocs = []string{
	`{"type":"object"}`, ` { "type" : "object" } `, "{\n\t\"a\":\r\n[1, 2 ,3]}", `{"a<b":"x & y > z"}`, "{\"d\":\"\u2028\u2029\xe2\x80\"}",
	`{"d":"\u2028 escaped"}`, `[]`, `{}`, `[ ]`, `{ }`, `null`, ` true `, `false`, `0`, `-0`, `1.5e3`, `-1.25E-3`,
	`1e+5`, `"s"`, `"\"\\\/\b\f\n\r\t\u00e9\u0001\u001f\u007f\ud83d\ude00"`, `[[[[]]]]`, `{"a":{"b":{"c":[null,true,false,"x",1.0]}}}`,
	"\"\xff\xfe invalid utf-8\"", `{"properties":{"a<b":{"description":"x & y \u2028","enum":[1.5e3,-0,"é"]}},"type":"object"}`,
	`{"b":1,"a":2,"é":3,"Z":4,"":5,"a\u0000":6}`, `{"a":1,"a":2}`, `{"n":12345678901234567890,"f":1.000,"e":1E400}`,
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `truex`, `nul`, `[1 2]`,
	`"a` + "\n" + `b"`, `"\x"`, `"\u12"`, `"\u12g4"`, `{"a":1}x`, `{"a":1} {}`, `[1]]`, `"unterminated`, "\x00", `{"a":"<"`,
	"[\"\xe2\x80\xa8\"]", `"&&&&&&&&&&&&&&&&<<<<<<<<>>>>>>>>"`, "{\"k\xe2\x80\xa9\":\"v\"}", `"\ud800"`, `"\udc00\ud800"`,
}
