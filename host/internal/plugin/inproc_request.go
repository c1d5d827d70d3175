package plugin

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonw"
)

// measureRequestAsSent returns the MeasureRequest a linked kind would
// decode from json.Marshal(req) — what a sandboxed kind sees — without
// encoding and decoding the case's texts, which were most of the
// in-process transport's CPU per call. ok is false when it is not sure,
// and the caller then takes the JSON round trip.
//
// The round trip, for the request's fields: strings come back as they
// are when they are valid UTF-8 (invalid bytes become U+FFFD: not taken
// here); a float comes back as it was unless it is not finite (which fails
// to encode: not taken here); an omitempty field that is empty (an empty
// string, slice, map or RawMessage) comes back zero — nil; a RawMessage
// comes back as json.Marshal writes it (compacted, HTML-escaped), and a
// nil one among a map's values as null. Slices, maps and RawMessages are
// copied so the kind cannot reach the host's memory, as with JSON. Strings
// are shared: they are immutable. FuzzMeasureRequestAsSent compares this
// with the round trip.
func measureRequestAsSent(req *abi.MeasureRequest) (out abi.MeasureRequest, ok bool) {
	if math.IsNaN(req.Threshold) || math.IsInf(req.Threshold, 0) {
		return out, false
	}
	c := &req.Case
	if !validStrings(req.Kind, req.Metric, req.JudgeModel, c.ID, c.Input, c.ActualOutput, c.ExpectedOutput) {
		return out, false
	}
	out = abi.MeasureRequest{Kind: req.Kind, Metric: req.Metric, Threshold: req.Threshold, JudgeModel: req.JudgeModel}
	if out.Config, ok = rawAsSent(req.Config, true); !ok {
		return out, false
	}
	if out.Prepared, ok = rawAsSent(req.Prepared, true); !ok {
		return out, false
	}
	out.Case = abi.TestCase{ID: c.ID, Input: c.Input, ActualOutput: c.ActualOutput, ExpectedOutput: c.ExpectedOutput}
	if out.Case.Context, ok = stringsAsSent(c.Context); !ok {
		return out, false
	}
	if out.Case.RetrievalContext, ok = stringsAsSent(c.RetrievalContext); !ok {
		return out, false
	}
	if out.Case.ToolsCalled, ok = toolsAsSent(c.ToolsCalled); !ok {
		return out, false
	}
	if out.Case.ExpectedTools, ok = toolsAsSent(c.ExpectedTools); !ok {
		return out, false
	}
	if len(c.Extra) > 0 {
		out.Case.Extra = make(map[string]json.RawMessage, len(c.Extra))
		for k, v := range c.Extra {
			if !utf8.ValidString(k) {
				return out, false
			}
			// A map value has no omitempty: nil is sent as null.
			if out.Case.Extra[k], ok = rawAsSent(v, false); !ok {
				return out, false
			}
		}
	}
	return out, true
}

func validStrings(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// stringsAsSent is an omitempty []string after the round trip.
func stringsAsSent(in []string) ([]string, bool) {
	if len(in) == 0 {
		return nil, true
	}
	if !validStrings(in...) {
		return nil, false
	}
	return append([]string(nil), in...), true
}

// toolsAsSent is an omitempty []abi.ToolCall after the round trip.
func toolsAsSent(in []abi.ToolCall) ([]abi.ToolCall, bool) {
	if len(in) == 0 {
		return nil, true
	}
	out := make([]abi.ToolCall, len(in))
	for i, t := range in {
		if !utf8.ValidString(t.Name) {
			return nil, false
		}
		out[i].Name = t.Name
		var ok bool
		if out[i].Arguments, ok = rawAsSent(t.Arguments, true); !ok {
			return nil, false
		}
		if out[i].Output, ok = rawAsSent(t.Output, true); !ok {
			return nil, false
		}
	}
	return out, true
}

// rawAsSent is a RawMessage after the round trip: omitted when empty and
// omitempty, null when nil otherwise, else as json.Marshal writes it
// (which is also what checks it is JSON at all). Valid JSON already in
// that form — what a metric's config and prepared state are, for every
// case — is copied after two scans instead of encoded anew;
// FuzzRawAsSent compares the two.
func rawAsSent(raw json.RawMessage, omitempty bool) (json.RawMessage, bool) {
	if len(raw) == 0 {
		if omitempty {
			return nil, true
		}
		if raw == nil {
			return json.RawMessage("null"), true
		}
		return nil, false // an empty, non-nil value fails to encode
	}
	if jsonw.MarshalForm(raw) {
		return append(json.RawMessage(nil), raw...), true
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	return b, true
}

// measureResultAsDecoded sets dst to what json.Unmarshal makes of b, the
// json.Marshal encoding of src, without decoding b (the kind's result: its
// details are most of it). It reports false, leaving dst alone, when it is
// not sure; the caller then decodes b. Marshal has succeeded, so src's
// floats are finite and its details valid JSON; what remains is that
// strings come back unchanged only when valid UTF-8, and details exactly
// as Marshal wrote them — unchanged only when already compact and free of
// what Marshal escapes (jsonw.MarshalForm; formChecked says the caller
// has checked that already, as measureResultLen does).
// FuzzMeasureResultAsDecoded compares this with the decoder.
func measureResultAsDecoded(src, dst *abi.MeasureResult, formChecked bool) bool {
	if src == nil || !validStrings(src.Reason, src.ScoreMode) || len(src.Details) > 0 && !formChecked && !jsonw.MarshalForm(src.Details) {
		return false
	}
	out := abi.MeasureResult{Success: src.Success, Threshold: src.Threshold, Reason: src.Reason, ScoreMode: src.ScoreMode}
	if src.Score != nil {
		s := *src.Score
		out.Score = &s
	}
	if len(src.Details) > 0 {
		out.Details = append(json.RawMessage(nil), src.Details...)
	}
	if e := src.Error; e != nil {
		if !validStrings(string(e.Code), e.Message, e.Plugin, e.Digest, e.Field, e.Stderr) {
			return false
		}
		ec := *e
		out.Error = &ec
	}
	*dst = out
	return true
}

// measureResultLen is len(json.Marshal(r)) without encoding r: the
// output cap needs only the length, and encoding the result (its details
// above all) to measure it was the transport's largest cost per call
// after the request. ok is false when it is not sure (details that are
// not valid JSON already in the form Marshal writes, a float Marshal
// refuses); the caller then encodes. FuzzMeasureResultLen compares it
// with json.Marshal.
func measureResultLen(r *abi.MeasureResult) (n int, ok bool) {
	if r == nil {
		return 0, false
	}
	n = len(`{"success":,"threshold":}`)
	if r.Score != nil {
		f, ok := floatLen(*r.Score)
		if !ok {
			return 0, false
		}
		n += len(`"score":,`) + f
	}
	if r.Success {
		n += len("true")
	} else {
		n += len("false")
	}
	f, ok := floatLen(r.Threshold)
	if !ok {
		return 0, false
	}
	n += f
	if r.Reason != "" {
		n += len(`,"reason":`) + stringLen(r.Reason)
	}
	if r.ScoreMode != "" {
		n += len(`,"score_mode":`) + stringLen(r.ScoreMode)
	}
	if len(r.Details) > 0 {
		// Marshal validates and compacts a RawMessage; one already
		// compact and free of what it escapes it writes unchanged.
		if !jsonw.MarshalForm(r.Details) {
			return 0, false
		}
		n += len(`,"details":`) + len(r.Details)
	}
	if e := r.Error; e != nil {
		n += len(`,"error":{"code":,"message":}`) + stringLen(string(e.Code)) + stringLen(e.Message)
		for _, opt := range [...]struct{ key, s string }{{"plugin", e.Plugin}, {"digest", e.Digest}, {"field", e.Field}, {"stderr", e.Stderr}} {
			if opt.s != "" {
				n += len(`,"":`) + len(opt.key) + stringLen(opt.s)
			}
		}
		if e.Retryable {
			n += len(`,"retryable":true`)
		}
	}
	return n, true
}

// floatLen is the length of a float64 as encoding/json writes it (ES6
// number formatting), false for what it refuses (NaN, ±Inf).
func floatLen(f float64) (int, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	n := len(b)
	if format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		n-- // e-09 is written e-9
	}
	return n, true
}

// stringLen is the length of s as encoding/json writes it, quotes and
// HTML escaping included: \" \\ \b \f \n \r \t take two bytes, other
// control bytes, <, >, &, U+2028, U+2029 and each invalid UTF-8 byte
// (\ufffd) six.
func stringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
