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

// referenceParse is the reply's parse as encoding/json made it before
// the judge moved its JSON to go-json-experiment: the tolerant parse by
// encoding/json, then the schema library's decode of its canonical bytes.
func referenceParse(content string) (json.RawMessage, any, error) {
	start := strings.IndexByte(content, '{')
	end := strings.LastIndexByte(content, '}')
	if start < 0 || end < start {
		return nil, nil, errors.New("no JSON object found in the reply")
	}
	canonical := func(b []byte) ([]byte, error) {
		if !json.Valid(b) {
			var v any
			return nil, json.Unmarshal(b, &v)
		}
		return v1Canonical(b)
	}
	b := []byte(content[start : end+1])
	obj, err := canonical(b)
	if err != nil {
		if fixed, changed := stripTrailingCommas(b); changed {
			obj, err = canonical(fixed)
		}
	}
	if err == nil && obj[0] != '{' {
		err = errors.New("not a JSON object")
	}
	if err != nil {
		return nil, nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(obj))
	return obj, v, err
}

// checkSameParse holds parseObject, structuredObject and scoreField to the
// reference on one reply: the same bytes, the same value, the same schema
// verdict and the same score field; a reply only the reference takes is
// one that repeats a name or holds invalid UTF-8 or a lone surrogate
// escape, which the judge refuses (strictRefusal).
func checkSameParse(t *testing.T, cs *compiledSchema, content string) {
	t.Helper()
	wantObj, wantValue, wantErr := referenceParse(content)
	got, err := parseObject(content)
	switch {
	case err != nil && wantErr == nil:
		if !strictRefusal([]byte(content), err) {
			t.Fatalf("parseObject(%q): %v; the reference makes %q", content, err, wantObj)
		}
		return
	case err == nil && wantErr != nil:
		t.Fatalf("parseObject(%q) = %q; the reference refuses it: %v", content, got.canonical, wantErr)
	case err != nil:
		return
	}
	if !bytes.Equal(got.canonical, wantObj) {
		t.Fatalf("parseObject(%q) = %q; the reference makes %q", content, got.canonical, wantObj)
	}
	if !reflect.DeepEqual(got.value, wantValue) {
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
	for _, f := range fields {
		g, w := scoreField(got.value, f), rawScore(wantObj, f)
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
	// A repeated name is refused, not merged: which of two scores the
	// judge meant is not for the host to guess.
	if _, err := parseObject(`{"score": 7, "score": 8}`); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("a repeated score was taken (%v)", err)
	}
}

// FuzzParseObject compares the parse of a reply with the reference
// (encoding/json and the schema library's decode) on any text.
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
