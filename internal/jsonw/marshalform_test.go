package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// marshalUnchanged is what MarshalForm stands for: json.Marshal of raw as
// a json.RawMessage succeeds and writes raw as it is.
func marshalUnchanged(raw []byte) bool {
	out, err := json.Marshal(json.RawMessage(raw))
	return err == nil && bytes.Equal(out, raw)
}

// nesting is raw's deepest bracket nesting, strings skipped (for the
// inputs MarshalForm declines as too deep).
func nesting(raw []byte) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

var marshalFormSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-7`, `1E+2`, `true`, `false`, `null`,
	`{"score":0.9,"reason":"ok","details":{"steps":["a","b"],"n":[1,2,3]}}`,
	`{"a":"x\"y\\z\/\b\f\n\r\t\u00e9\u2028"}`, `{"é":"日本語"}`, "\"\xff\xfe\"", "\"\xe2\x80\xa8\"", "\"\xe2\x80\xa9\"",
	"\"\xe2\x80\xaa\"", "\"\xe2\x80\"", `"<"`, `">"`, `"&"`, `{"a" :1}`, `{"a":1 }`, ` {}`, `{} `, "[1,\n2]",
	`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"\x1f\"", "\"\x7f\"", `"abc`, `{"a":}`,
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a"}`, `{1:2}`, `tru`, `nul`, `[[[[[]]]]]`, `{"a":[{"b":{"c":null}}]}`,
	`"12345678"`, `"1234567"`, `"123456789abcdefgh\\n"`, `"abcdefgh<ijk"`, `[]]`, `{}{}`,
}

func TestMarshalFormIsMarshal(t *testing.T) {
	deep := strings.Repeat("[", maxFormDepth+1) + strings.Repeat("]", maxFormDepth+1)
	atLimit := strings.Repeat("[", maxFormDepth) + strings.Repeat("]", maxFormDepth)
	for _, s := range append(marshalFormSeeds, atLimit) {
		if got, want := MarshalForm([]byte(s)), marshalUnchanged([]byte(s)); got != want {
			t.Errorf("MarshalForm(%q) = %v, json.Marshal unchanged %v", s, got, want)
		}
	}
	if MarshalForm([]byte(deep)) || !marshalUnchanged([]byte(deep)) {
		t.Errorf("nesting %d: MarshalForm should decline what json.Marshal keeps", maxFormDepth+1)
	}
	if MarshalForm(nil) || MarshalForm([]byte{}) {
		t.Error("empty input: json.Marshal fails on an empty non-nil RawMessage and writes null for nil")
	}
}

func FuzzMarshalForm(f *testing.F) {
	for _, s := range marshalFormSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, want := MarshalForm(raw), marshalUnchanged(raw)
		if got && !want {
			t.Fatalf("MarshalForm(%q) = true, but json.Marshal changes it or fails", raw)
		}
		if !got && want && len(raw) > 0 && nesting(raw) <= maxFormDepth {
			t.Fatalf("MarshalForm(%q) = false, but json.Marshal writes it unchanged", raw)
		}
	})
}

func BenchmarkMarshalForm(b *testing.B) {
	details := []byte(`{"steps":["Read the input and the actual output.","Check each claim of the output against the input and the expected output.","Score 0 to 10 for factual correctness; penalise omissions."],"score_token":"7","raw_score":7,"weighted":0.6900000000000001,"alternatives":[{"token":"7","prob":0.61},{"token":"8","prob":0.22},{"token":"6","prob":0.1}],"reason":"The output states the capital correctly but omits the population figure the expected output gives."}`)
	b.Run("MarshalForm", func(b *testing.B) {
		b.SetBytes(int64(len(details)))
		for b.Loop() {
			if !MarshalForm(details) {
				b.Fatal("not in form")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(details)))
		for b.Loop() {
			if !json.Valid(details) {
				b.Fatal("invalid")
			}
		}
	})
}
