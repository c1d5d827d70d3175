package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

var indentSamples = []any{
	map[string]any{},
	[]any{},
	map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{1, "x", nil, true, map[string]any{"d": "e\"f\\"}}},
	"a \"quoted\" \\ string with : , { } [ ] inside",
	[]any{[]any{[]any{}}, map[string]any{"": ""}},
	12.5,
	nil,
	CaseResult{CaseID: "a", Metrics: []MetricResult{{Metric: "m", Details: json.RawMessage(`{"x":[1,{"y":"<&>"}]}`)}}},
}

func TestAppendIndentIsJSONIndent(t *testing.T) {
	for _, v := range indentSamples {
		src, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		checkIndent(t, src)
	}
}

func checkIndent(t *testing.T, src []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("json.Indent(%s): %v", src, err)
	}
	if got := appendIndent([]byte("prefix"), src); !bytes.Equal(got, append([]byte("prefix"), want.Bytes()...)) {
		t.Fatalf("appendIndent(%s):\n%s\nwant\n%s", src, got, want.Bytes())
	}
}

// FuzzAppendIndent: on anything encoding/json writes (here: any valid
// JSON compacted by it), appendIndent is json.Indent.
func FuzzAppendIndent(f *testing.F) {
	for _, v := range indentSamples {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	for _, l := range resultLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var v any
		if json.Unmarshal(in, &v) != nil {
			t.Skip()
		}
		src, err := json.Marshal(v)
		if err != nil {
			t.Skip()
		}
		checkIndent(t, src)
		var compact bytes.Buffer
		if json.Compact(&compact, in) == nil {
			checkIndent(t, compact.Bytes()) // raw messages keep their own numbers and escapes
		}
	})
}
