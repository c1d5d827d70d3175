package plugin

import (
	"encoding/json"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// FuzzRequestEncoder holds the encoder to json.Marshal on measure requests
// whose config and prepared steps change from call to call (the memo must
// never answer one value with another's bytes), errors included.
func FuzzRequestEncoder(f *testing.F) {
	f.Add([]byte(`{"criteria": "x <y>"}`), []byte(`{"criteria":"z"}`), []byte(`["s"]`), "a <b>\n\xff", 0.5)
	f.Add([]byte(`{`), []byte(nil), []byte(`null`), "", 0.0)
	f.Fuzz(func(t *testing.T, config1, config2, prepared []byte, text string, threshold float64) {
		var e requestEncoder
		for i, config := range [][]byte{config1, config2, config1, config1, nil} {
			r := &abi.MeasureRequest{Kind: "geval", Metric: "m", Config: config, Prepared: prepared, Threshold: threshold,
				Case: abi.TestCase{ID: "c", Input: text, ActualOutput: text + "!", Context: []string{text}}}
			if i == 3 {
				r.Case.Extra = map[string]json.RawMessage{"k": config1}
			}
			want, werr := json.Marshal(r)
			got, gerr := e.encode(r)
			if (werr == nil) != (gerr == nil) || string(got) != string(want) {
				t.Fatalf("call %d: encode = %s (%v), json.Marshal = %s (%v)", i, got, gerr, want, werr)
			}
		}
	})
}

// TestRequestEncoderCopiesTheMemo: bytes the memo hands out are appended
// into each request's own buffer, so a caller changing its config later
// changes neither the memo nor an earlier request.
func TestRequestEncoderCopiesTheMemo(t *testing.T) {
	var e requestEncoder
	config := []byte(`{"a":1}`)
	r := &abi.MeasureRequest{Kind: "k", Metric: "m", Config: config, Case: abi.TestCase{ID: "c"}}
	first, _ := e.encode(r)
	saved := string(first)
	config[5] = '2'
	second, _ := e.encode(r)
	if string(first) != saved {
		t.Fatalf("an earlier request changed: %s", first)
	}
	if want, _ := json.Marshal(r); string(second) != string(want) {
		t.Fatalf("after the config changed: %s, want %s", second, want)
	}
}
