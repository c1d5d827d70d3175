package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// referenceParse is the reply's parse as it was before the one-pass
// parser: the tolerant parse by encoding/json, then the library's decode
// of its canonical bytes for the schema.
func referenceParse(content string) (json.RawMessage, any, error) {
	start := strings.IndexByte(content, '{')
	end := strings.LastIndexByte(content, '}')
	if start < 0 || end < start {
		return nil, nil, errors.New("no JSON object found in the reply")
	}
	obj, err := referenceObject(content[start : end+1])
	if err != nil {
		return nil, nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(obj.canonical))
	return obj.canonical, v, err
}

// checkSameParse holds parseObject, structuredObject and scoreField to the
// reference on one reply: the same bytes, the same value, the same error
// word for word, the same schema verdict and the same score field.
func checkSameParse(t *testing.T, cs *compiledSchema, content string) {
	t.Helper()
	wantObj, wantValue, wantErr := referenceParse(content)
	got, err := parseObject(content)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("parseObject(%q) error %v; the reference says %v", content, err, wantErr)
	}
	if !bytes.Equal(got.canonical, wantObj) {
		t.Fatalf("parseObject(%q) = %q; the reference makes %q", content, got.canonical, wantObj)
	}
	if err != nil {
		return
	}
	if got.value != nil && !reflect.DeepEqual(got.value, wantValue) {
		t.Fatalf("parseObject(%q) value %#v; the library decodes %#v", content, got.value, wantValue)
	}

	gotS, gotP := structuredObject(cs, content)
	wantS, wantP := structuredReply(cs, content)
	if (gotP == nil) != (wantP == nil) || (gotP != nil && sameLetters(gotP.Error()) != sameLetters(wantP.Error())) {
		t.Fatalf("structuredObject(%q) problem %v; structuredReply says %v", content, gotP, wantP)
	}
	if !bytes.Equal(gotS.canonical, wantS) {
		t.Fatalf("structuredObject(%q) = %q; structuredReply makes %q", content, gotS.canonical, wantS)
	}
	fields := []string{"score", "", "Score"}
	if m, ok := wantValue.(map[string]any); ok {
		for k := range m {
			fields = append(fields, k)
		}
	}
	value := got.value
	if value == nil {
		value = wantValue
	}
	for _, f := range fields {
		g, w := scoreField(value, f), rawScore(wantObj, f)
		if (g == nil) != (w == nil) || (g != nil && *g != *w) {
			t.Fatalf("scoreField(%q, %q) = %v; rawScore says %v", content, f, show(g), show(w))
		}
	}
}

// sameLetters sorts a problem's text: the library names the additional
// properties of one object in map order, which differs from run to run
// whichever parse made the value (the values are equal, checked above).
func sameLetters(s string) string {
	r := []rune(s)
	slices.Sort(r)
	return string(r)
}

func show(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

var parseObjectSeeds = []string{
	benchVerdict,
	`{"reason": "ok", "score": 7}`,
	`{"reason":"ok","score":"7"}`,
	`{"reason": "ok", "score": " 7.0 "}`,
	`{"reason": "ok", "score": 7.5}`,
	`{"reason": "ok", "score": 1e1}`,
	`{"reason": "ok", "score": -0}`,
	`{"reason": "ok", "score": "0x1p3"}`,
	`{"reason": "ok", "score": 12345678901234567890}`,
	`{"reason": "ok", "score": true}`,
	`{"reason": "ok", "score": null}`,
	`{"reason": "ok", "score": [7]}`,
	`{"score": 7, "score": 8}`,
	`{"b": 1, "a": {"d": [], "c": {}}, "": ""}`,
	"Sure!\n```json\n{\"reason\": \"ok\", \"score\": 7,}\n```",
	`{"a": [1, 2,], "b": {"c": 3,},}`,
	`{"a": "x,}", "b": 1,}`,
	`{"a": "say \"hi\",]", "b": 2,}`,
	`{"s": "\\ \/ \b \f \n \r \t \u0000 \u001f \u00e9 \u2028 \u2029 \ufffd"}`,
	"{\"s\": \"é ✓ 😀 \u2028 \u2029 \x7f <&>\"}",
	`{"s": "\ud83d\ude00"}`,
	`{"s": "\ud800"}`,
	"{\"s\": \"\xff\"}",
	"{\"s\": \"\xed\xa0\x80\"}",
	"{\"s\": \"a\tb\"}",
	`{"a": 01}`,
	`{"a": 1.}`,
	`{"a": .5}`,
	`{"a": 1e}`,
	`{"a": -}`,
	`{"a": tru}`,
	`{"a": truex}`,
	`{"a":1} and {"b":2}`,
	`{"a":1}}`,
	`{"a" 1}`,
	`{"a":1,,}`,
	`{,}`,
	`{"a":[,]}`,
	`{"a": "\x"}`,
	`{"a": "\u12"}`,
	`{}`,
	` { } `,
	`{{}}`,
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	strings.Repeat(`{"a":[`, 40) + "1" + strings.Repeat("]}", 40),
	`seven`,
	`} {`,
	"",
}

func TestParseObjectMatchesReference(t *testing.T) {
	var set schemaSet
	cs, err := set.compile(json.RawMessage(verdictSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range parseObjectSeeds {
		checkSameParse(t, cs, s)
	}
	// The common replies take the one-pass path, not the reference.
	for _, s := range []string{benchVerdict, "```json\n{\"reason\": \"ok\", \"score\": 7,}\n```", `{"s": "\u00e9\n"}`} {
		if obj, err := parseObject(s); err != nil || obj.value == nil {
			t.Errorf("parseObject(%q) took the reference path (%v)", s, err)
		}
	}
}

// FuzzParseObject compares the one-pass parse of a reply with the
// reference (encoding/json and the schema library's decode) on any text.
func FuzzParseObject(f *testing.F) {
	for _, s := range parseObjectSeeds {
		f.Add(s)
	}
	var set schemaSet
	cs, err := set.compile(json.RawMessage(verdictSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content string) {
		checkSameParse(t, cs, content)
	})
}
