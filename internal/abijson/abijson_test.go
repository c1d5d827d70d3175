package abijson

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func fuzzCase(id, s string, opt uint8) abi.TestCase {
	c := abi.TestCase{ID: id}
	if opt&1 != 0 {
		c.Input = s
	}
	if opt&2 != 0 {
		c.ActualOutput = s + "x"
	}
	if opt&4 != 0 {
		c.ExpectedOutput = s
	}
	if opt&8 != 0 {
		c.Context = []string{s, ""}
	}
	if opt&16 != 0 {
		c.RetrievalContext = []string{}
	}
	if opt&32 != 0 {
		c.Extra = map[string]json.RawMessage{"k": json.RawMessage(`1`)}
	}
	if opt&64 != 0 {
		c.ToolsCalled = []abi.ToolCall{{Name: s}}
	}
	return c
}

// FuzzAppendTestCase holds AppendTestCase to json.Marshal, byte for byte.
func FuzzAppendTestCase(f *testing.F) {
	f.Add("case-1", "a <b> & \"c\"\n\t\x01 \u2028 é \xff", uint8(0xff))
	f.Add("", "", uint8(0))
	f.Add("x", "y", uint8(0x1f))
	f.Fuzz(func(t *testing.T, id, s string, opt uint8) {
		c := fuzzCase(id, s, opt)
		got, ok := AppendTestCase(nil, &c)
		if !ok {
			if opt&(32|64) == 0 {
				t.Fatalf("AppendTestCase left a case without tools or extra to encoding/json")
			}
			return
		}
		want, err := json.Marshal(&c)
		if err != nil || string(got) != string(want) {
			t.Fatalf("AppendTestCase:\n%s\njson.Marshal (%v):\n%s", got, err, want)
		}
	})
}

// FuzzAppendMeasureRequest holds AppendMeasureRequest, given what
// json.Marshal writes of the config and prepared steps, to json.Marshal.
func FuzzAppendMeasureRequest(f *testing.F) {
	f.Add("geval", "a <b> & \"c\"\n\t\x01 \u2028 é \xff", 0.5, []byte(`{"criteria": "x <y>"}`), []byte(`["s1"]`), uint8(0x0f))
	f.Add("", "", 0.0, []byte(nil), []byte(nil), uint8(0))
	f.Add("k", "s", math.NaN(), []byte(`{}`), []byte(`{`), uint8(0))
	f.Fuzz(func(t *testing.T, kind, s string, threshold float64, config, prepared []byte, opt uint8) {
		r := abi.MeasureRequest{Kind: kind, Metric: "m" + s, Threshold: threshold, Config: config, Prepared: prepared, Case: fuzzCase("id", s, opt)}
		if opt&128 != 0 {
			r.JudgeModel = s
		}
		want, err := json.Marshal(&r)
		if err != nil {
			return // the caller gets encoding/json's error from encoding/json
		}
		asSent := func(raw json.RawMessage) []byte {
			if len(raw) == 0 {
				return nil
			}
			b, err := json.Marshal(raw)
			if err != nil {
				t.Fatalf("json.Marshal of the request succeeded but not of %q: %v", raw, err)
			}
			return b
		}
		got, ok := AppendMeasureRequest([]byte("prefix"), &r, asSent(r.Config), asSent(r.Prepared))
		if !ok {
			if opt&(32|64) == 0 {
				t.Fatalf("AppendMeasureRequest left an encodable request without tools or extra to encoding/json")
			}
			return
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("AppendMeasureRequest:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
		}
	})
}

// FuzzAppendError holds AppendError to json.Marshal.
func FuzzAppendError(f *testing.F) {
	f.Add("judge_error", "a <b>\n", "p", "", true)
	f.Add("", "", "", "", false)
	f.Fuzz(func(t *testing.T, code, msg, plugin, stderr string, retryable bool) {
		e := abi.Error{Code: abi.Code(code), Message: msg, Plugin: plugin, Digest: plugin + "d", Field: msg, Stderr: stderr, Retryable: retryable}
		want, _ := json.Marshal(&e)
		if got := AppendError(nil, &e); string(got) != string(want) {
			t.Fatalf("AppendError:\n%s\njson.Marshal:\n%s", got, want)
		}
	})
}

// TestEncodersKnowEveryField fails when a field is added to a type these
// encoders write, until they write it too (then update the list).
func TestEncodersKnowEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{abi.Error{}, "code message plugin,omitempty digest,omitempty field,omitempty stderr,omitempty retryable,omitempty,omitzero"},
		{abi.TestCase{}, "id input,omitempty actual_output,omitempty expected_output,omitempty context,omitempty " +
			"retrieval_context,omitempty tools_called,omitempty expected_tools,omitempty extra,omitempty"},
		{abi.MeasureRequest{}, "kind metric config,omitempty prepared,omitempty threshold judge_model,omitempty case"},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags []string
		for i := range typ.NumField() {
			tags = append(tags, typ.Field(i).Tag.Get("json"))
		}
		if got := strings.Join(tags, " "); got != tc.want {
			t.Errorf("%s's fields changed: abijson must write them as json.Marshal does.\ngot  %s\nwant %s", typ, got, tc.want)
		}
	}
}
