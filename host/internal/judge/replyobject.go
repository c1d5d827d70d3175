package judge

import (
	jsonv1 "encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A structured reply's content is parsed once (parseObject): what that
// parse finds — the canonical bytes the response carries and the value
// tree the schema validates and the score is read from — serves every
// later step. Request schemas are read the same way (canonicalJSON), so a
// schema and a reply are one kind of JSON to the judge: strict RFC 8259
// as github.com/go-json-experiment/json reads it (a repeated name is an
// error, not a merge), numbers kept exactly as written.

// replyObject is a structured reply's JSON object, parsed once.
type replyObject struct {
	// canonical is the object re-encoded with sorted keys, compact (see
	// canonicalJSON): what the response and the cache carry.
	canonical jsonv1.RawMessage
	// value is the object as jsonschema.UnmarshalJSON would decode it:
	// map[string]any, []any, string, json.Number, bool and nil.
	value any
}

// parseObject is ParseTolerant that also returns the decoded value.
func parseObject(content string) (replyObject, error) {
	start := strings.IndexByte(content, '{')
	end := strings.LastIndexByte(content, '}')
	if start < 0 || end < start {
		return replyObject{}, errors.New("no JSON object found in the reply")
	}
	candidate := []byte(content[start : end+1])
	obj, err := objectOf(candidate)
	if err == nil {
		return obj, nil
	}
	// Valid JSON has no comma before a '}' or ']' outside its strings, so
	// the strip changes only a candidate that is not JSON.
	if fixed, changed := stripTrailingCommas(candidate); changed {
		if obj, err2 := objectOf(fixed); err2 == nil {
			return obj, nil
		}
	}
	return replyObject{}, fmt.Errorf("invalid JSON: %w", err)
}

// objectOf parses b, which must be exactly one JSON object.
func objectOf(b []byte) (replyObject, error) {
	v, canonical, err := parseJSON(b)
	if err != nil {
		return replyObject{}, err
	}
	if _, ok := v.(map[string]any); !ok {
		return replyObject{}, errors.New("not a JSON object")
	}
	return replyObject{canonical: canonical, value: v}, nil
}

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant whitespace, keeping numbers exactly as written.
func canonicalJSON(raw []byte) ([]byte, error) {
	_, canonical, err := parseJSON(raw)
	return canonical, err
}

// parseJSON reads b, exactly one JSON value, as its value tree and its
// canonical form: object keys sorted bytewise, no insignificant
// whitespace, numbers as written, strings escaped as encoding/json's
// Encoder escapes them with SetEscapeHTML(false) (U+2028 and U+2029 as
// \u escapes) — the bytes the cache keys of existing stores were made
// from.
func parseJSON(b []byte) (any, []byte, error) {
	var v any
	if err := json.Unmarshal(b, &v, treeOptions); err != nil {
		return nil, nil, err
	}
	canonical, err := json.Marshal(v, canonicalOptions)
	if err != nil {
		return nil, nil, err
	}
	return v, canonical, nil
}

// canonicalOptions write a value tree in canonical form.
var canonicalOptions = json.JoinOptions(
	json.Deterministic(true),
	jsontext.EscapeForJS(true),
	json.WithMarshalers(json.MarshalToFunc(func(enc *jsontext.Encoder, n jsonv1.Number) error {
		return enc.WriteValue(jsontext.Value(n))
	})),
)

// treeOptions decode a value tree as jsonschema.UnmarshalJSON does
// (encoding/json's UseNumber): a number as its literal, where the
// library's own decoding of an any makes it a float64, which loses what a
// score or a schema bound says.
var treeOptions = json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return json.SkipFunc // not a number: the library's own decoding
	}
	val, err := dec.ReadValue()
	*v = jsonv1.Number(val)
	return err
}))

// stripTrailingCommas removes commas that precede '}' or ']' (ignoring
// whitespace), outside strings.
func stripTrailingCommas(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	changed := false
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		if c == ',' {
			k := i + 1
			for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
				k++
			}
			if k < len(b) && (b[k] == '}' || b[k] == ']') {
				changed = true
				continue
			}
		}
		out = append(out, c)
	}
	return out, changed
}
