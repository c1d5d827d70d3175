package judge

import (
	"bytes"
	"encoding/json"
	"strings"
)

// rawScore is how the score field was read before a reply was parsed once,
// kept as the reference the tests hold scoreField to. It reads the integer in the top-level field of a structured reply:
// 7, 7.0 and "7" all count. nil when there is none, so package score looks
// in the text instead.
func rawScore(obj json.RawMessage, field string) *int {
	if len(obj) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil
	}
	v, ok := fields[field]
	if !ok {
		return nil
	}
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil
		}
		v = []byte(strings.TrimSpace(s))
	}
	return integerScore(string(v))
}
