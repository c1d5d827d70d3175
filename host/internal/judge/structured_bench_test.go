package judge

import (
	"encoding/json"
	"testing"
)

// benchVerdict is a G-Eval scoring reply as a judge writes it under the
// verdict schema: a reason of a few sentences and the score.
const benchVerdict = `{"reason": "The actual output addresses the input directly and agrees with the expected output on the main points; it omits the caveat about \"edge cases\" and one step of the derivation.", "score": 8}`

// BenchmarkStructuredReply is what execute does to a scored reply's
// content after the body is decoded: parsed, validated against the
// schema, its score field read.
func BenchmarkStructuredReply(b *testing.B) {
	var set schemaSet
	cs, err := set.compile(json.RawMessage(verdictSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, content string }{
		{"verdict", benchVerdict},
		{"fenced_trailing_comma", "Here is my verdict:\n```json\n" + benchVerdict[:len(benchVerdict)-1] + ",}\n```"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj, problem := structuredObject(cs, tc.content)
				if problem != nil || scoreField(obj.value, "score") == nil {
					b.Fatal(problem)
				}
			}
		})
	}
}
