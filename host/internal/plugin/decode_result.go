package plugin

import (
	"math"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonr"
)

// decodeMeasureResult is json.Unmarshal(raw, r) without reflection, for
// the results guests write: on a trivial metric's Wasm path that call was
// ≈ 4% of the host's CPU. It answers true only when it is sure, and *r is
// then exactly what json.Unmarshal makes of raw (the same floats bit for
// bit, Details a copy of the value's bytes, a new Error); false means
// "not sure" and leaves r untouched, and the caller runs json.Unmarshal,
// which decides, errors included. FuzzMeasureResultDecode holds it to
// that on any input.
//
// It is sure of: r pointing at the zero value (json.Unmarshal merges into
// what is there), an object with only MeasureResult's and Error's keys
// spelled as their tags, each once, values of their fields' types or
// null. Anything else — another key, a case variant encoding/json would
// match, a type encoding/json would refuse, nesting past maxQuickDepth —
// is encoding/json's. It checks the syntax of everything it reads, so its
// answer does not rest on the caller having checked raw first.
func decodeMeasureResult(raw []byte, r *abi.MeasureResult) bool {
	if r == nil || !zeroMeasureResult(r) {
		return false
	}
	d := resultDecoder{jsonr.Reader{B: raw}}
	var res abi.MeasureResult
	d.Space()
	var fields seen
	ok := d.Object(func(key []byte) bool {
		switch string(key) {
		case "score":
			return fields.first(0) && d.floatPtr(&res.Score)
		case "success":
			return fields.first(1) && d.boolean(&res.Success)
		case "threshold":
			return fields.first(2) && d.float(&res.Threshold)
		case "reason":
			return fields.first(3) && d.Str(&res.Reason)
		case "score_mode":
			return fields.first(4) && d.Str(&res.ScoreMode)
		case "details":
			return fields.first(5) && d.Raw(&res.Details, maxQuickDepth)
		case "error":
			return fields.first(6) && d.errorValue(&res.Error)
		}
		return false
	})
	if !ok {
		return false
	}
	d.Space()
	if d.I != len(d.B) {
		return false
	}
	*r = res
	return true
}

// zeroMeasureResult: r holds nothing json.Unmarshal could merge into or
// leave in place, down to a -0 threshold and an empty non-nil Details.
func zeroMeasureResult(r *abi.MeasureResult) bool {
	return r.Score == nil && !r.Success && math.Float64bits(r.Threshold) == 0 && r.Reason == "" &&
		r.ScoreMode == "" && r.Details == nil && r.Error == nil
}

// resultDecoder reads a result with jsonr's reader; each method returns
// false when it is not sure, and the caller gives up (the decoder is not
// reused).
type resultDecoder struct{ jsonr.Reader }

// seen marks the fields an object has had: a key that repeats is left to
// encoding/json (which keeps the last; decodeStrict refuses it before),
// since the fields' decoders assume they start from zero.
type seen uint16

// first reports whether field i is new, and marks it.
func (s *seen) first(i int) bool {
	if *s&(1<<i) != 0 {
		return false
	}
	*s |= 1 << i
	return true
}

func (d *resultDecoder) errorValue(out **abi.Error) bool {
	if d.null() {
		return true // *out stays nil
	}
	e := new(abi.Error)
	var fields seen
	if !d.Object(func(key []byte) bool {
		switch string(key) {
		case "code":
			return fields.first(0) && d.Str((*string)(&e.Code))
		case "message":
			return fields.first(1) && d.Str(&e.Message)
		case "plugin":
			return fields.first(2) && d.Str(&e.Plugin)
		case "digest":
			return fields.first(3) && d.Str(&e.Digest)
		case "field":
			return fields.first(4) && d.Str(&e.Field)
		case "stderr":
			return fields.first(5) && d.Str(&e.Stderr)
		case "retryable":
			return fields.first(6) && d.boolean(&e.Retryable)
		}
		return false
	}) {
		return false
	}
	*out = e
	return true
}

// null consumes a null. Into a pointer encoding/json stores nil, into a
// bool, number or string it stores nothing: from the zero value both
// leave the field as it is.
func (d *resultDecoder) null() bool { return d.Literal("null") }

func (d *resultDecoder) boolean(out *bool) bool {
	switch {
	case d.Literal("true"):
		*out = true
		return true
	case d.Literal("false"), d.null():
		return true
	}
	return false
}

// float reads a number, or null, which leaves the zero value.
func (d *resultDecoder) float(out *float64) bool {
	if d.null() {
		return true
	}
	return d.Float(out)
}

func (d *resultDecoder) floatPtr(out **float64) bool {
	if d.null() {
		return true
	}
	var f float64
	if !d.Float(&f) {
		return false
	}
	*out = &f
	return true
}
