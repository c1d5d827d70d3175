package engine

import (
	"bytes"
	"encoding/json"
	"strings"
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

func BenchmarkAppendIndent(b *testing.B) {
	src, err := json.Marshal(map[string]any{
		"case_id": "case-000001", "config_hash": "09935636f1fa8763",
		"metrics": []any{map[string]any{"metric": "correctness", "kind": "geval", "score": 0.69, "reason": strings.Repeat("The output is mostly right but misses a detail. ", 8)}},
		"case": map[string]any{"id": "case-000001", "input": strings.Repeat("What does the \"response cache\" share between runs? ", 12),
			"actual_output": strings.Repeat("It shares the judge's replies, keyed by the request. ", 10), "expected_output": "The judge's replies."},
	})
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst = appendIndent(dst[:0], src)
	}
}
