package guest

import (
	"encoding/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonr"
)

// decodeMeasureRequest decodes a measure request as json.Unmarshal does
// into a zero abi.MeasureRequest, through a fast path for the requests a
// host writes.
//
// Why: a guest runs under wazero with close-on-context-done, which leaves
// the compiled code for the host's Go at every loop iteration (≈ 50 ns);
// encoding/json steps through a request byte by byte, several calls and
// loop turns per byte, and decoding a 1 KiB request took ≈ 0.75 ms of the
// ≈ 1.2 ms a trivial metric call cost. The fast path finds the end of a
// string 8 bytes per loop turn and copies it in one go.
//
// It is exact by construction: it takes only what it fully understands
// (the keys of the ABI types spelled as the host spells them, strings,
// numbers, arrays and objects, no null) and checks the JSON syntax of all
// of it; anything else — another key, a different letter case, null,
// nesting past maxFastDepth, a syntax error — is decided by json.Unmarshal,
// errors included. FuzzDecodeMeasureRequest holds it to: the fast path's
// answer, when it gives one, equals json.Unmarshal's.
func decodeMeasureRequest(data []byte, r *abi.MeasureRequest) error {
	d := fastDecoder{jsonr.Reader{B: data}}
	var fast abi.MeasureRequest
	if d.measureRequest(&fast) {
		*r = fast
		return nil
	}
	*r = abi.MeasureRequest{}
	return json.Unmarshal(data, r)
}

// maxFastDepth bounds the nesting of a raw value (config, prepared,
// tool arguments, extra) the fast path checks itself.
const maxFastDepth = 64

// fastDecoder reads a request with jsonr's reader; each method returns
// false when it is not sure, and the caller gives up (the decoder is not
// reused).
type fastDecoder struct{ jsonr.Reader }

func (d *fastDecoder) measureRequest(r *abi.MeasureRequest) bool {
	d.Space()
	ok := d.Object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return d.Str(&r.Kind)
		case "metric":
			return d.Str(&r.Metric)
		case "config":
			return d.raw(&r.Config)
		case "prepared":
			return d.raw(&r.Prepared)
		case "threshold":
			return d.Float(&r.Threshold)
		case "judge_model":
			return d.Str(&r.JudgeModel)
		case "case":
			return d.testCase(&r.Case)
		}
		return false
	})
	if !ok {
		return false
	}
	d.Space()
	return d.I == len(d.B)
}

func (d *fastDecoder) testCase(c *abi.TestCase) bool {
	return d.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.Str(&c.ID)
		case "input":
			return d.Str(&c.Input)
		case "actual_output":
			return d.Str(&c.ActualOutput)
		case "expected_output":
			return d.Str(&c.ExpectedOutput)
		case "context":
			return d.strings(&c.Context)
		case "retrieval_context":
			return d.strings(&c.RetrievalContext)
		case "tools_called":
			return d.tools(&c.ToolsCalled)
		case "expected_tools":
			return d.tools(&c.ExpectedTools)
		case "turns":
			return d.turns(&c.Turns)
		case "scenario":
			return d.Str(&c.Scenario)
		case "expected_outcome":
			return d.Str(&c.ExpectedOutcome)
		case "chatbot_role":
			return d.Str(&c.ChatbotRole)
		case "extra":
			return d.extra(&c.Extra)
		}
		return false
	})
}

func (d *fastDecoder) turns(out *[]abi.Turn) bool {
	if *out != nil {
		return false
	}
	list := []abi.Turn{}
	ok := d.Array(func() bool {
		var t abi.Turn
		ok := d.Object(func(key []byte) bool {
			switch string(key) {
			case "role":
				return d.Str(&t.Role)
			case "content":
				return d.Str(&t.Content)
			case "tools_called":
				return d.tools(&t.ToolsCalled)
			case "retrieval_context":
				return d.strings(&t.RetrievalContext)
			}
			return false
		})
		list = append(list, t)
		return ok
	})
	*out = list
	return ok
}

// tools, turns and extra decline a key seen before in the same object:
// encoding/json decodes the second value into the first (a tool keeps an
// output only the first had, a map keeps both key sets), which the fast
// path does not imitate.

func (d *fastDecoder) tools(out *[]abi.ToolCall) bool {
	if *out != nil {
		return false
	}
	list := []abi.ToolCall{}
	ok := d.Array(func() bool {
		var t abi.ToolCall
		ok := d.Object(func(key []byte) bool {
			switch string(key) {
			case "name":
				return d.Str(&t.Name)
			case "arguments":
				return d.raw(&t.Arguments)
			case "output":
				return d.raw(&t.Output)
			}
			return false
		})
		list = append(list, t)
		return ok
	})
	*out = list
	return ok
}

func (d *fastDecoder) strings(out *[]string) bool {
	list := []string{}
	ok := d.Array(func() bool {
		var s string
		ok := d.Str(&s)
		list = append(list, s)
		return ok
	})
	*out = list
	return ok
}

func (d *fastDecoder) extra(out *map[string]json.RawMessage) bool {
	if *out != nil {
		return false
	}
	m := map[string]json.RawMessage{}
	*out = m
	if !d.Peek('{') {
		return false
	}
	d.I++
	d.Space()
	if d.Peek('}') {
		d.I++
		return true
	}
	for {
		var key string
		if !d.Str(&key) {
			return false
		}
		d.Space()
		if !d.Peek(':') {
			return false
		}
		d.I++
		d.Space()
		var v json.RawMessage
		if !d.raw(&v) {
			return false
		}
		m[key] = v
		if !d.Next('}') {
			return false
		}
		if d.B[d.I-1] == '}' {
			return true
		}
	}
}

// raw reads any value but null and keeps its bytes, as json.RawMessage
// (null is json.Unmarshal's: it leaves a RawMessage field nil).
func (d *fastDecoder) raw(out *json.RawMessage) bool {
	return !d.Peek('n') && d.Raw(out, maxFastDepth)
}
