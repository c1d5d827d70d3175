package guest

import (
	"encoding/json"
	"strconv"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonr"
	"github.com/agentanvil/anvil/internal/jsonw"
)

// encodeMeasureResult writes r exactly as json.Marshal does (byte for
// byte; FuzzEncodeMeasureResult holds it to that), skipping plain runs of
// text 8 bytes per loop turn. Marshalling a small result with
// encoding/json cost a Go guest ≈ 0.13 ms under wazero's termination
// checks (see decodeMeasureRequest). What it does not write itself — an
// error, details that are not compact JSON free of what encoding/json
// escapes, a NaN or infinite number — it leaves to json.Marshal.
func encodeMeasureResult(r *abi.MeasureResult) ([]byte, error) {
	if r == nil || r.Error != nil || !plainDetails(r.Details) ||
		!jsonw.Finite(r.Threshold) || (r.Score != nil && !jsonw.Finite(*r.Score)) {
		return json.Marshal(r)
	}
	b := make([]byte, 0, 64+len(r.Reason)+len(r.ScoreMode)+len(r.Details))
	b = append(b, '{')
	if r.Score != nil {
		b = append(b, `"score":`...)
		b = jsonw.AppendFloat(b, *r.Score)
		b = append(b, ',')
	}
	b = append(b, `"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"threshold":`...)
	b = jsonw.AppendFloat(b, r.Threshold)
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonw.AppendString(b, r.Reason)
	}
	if r.ScoreMode != "" {
		b = append(b, `,"score_mode":`...)
		b = jsonw.AppendString(b, r.ScoreMode)
	}
	if len(r.Details) > 0 {
		b = append(b, `,"details":`...)
		b = append(b, r.Details...)
	}
	return append(b, '}'), nil
}

// plainDetails: details json.Marshal would copy unchanged — valid JSON
// with no space outside or inside strings and nothing it escapes ('<',
// '>', '&', U+2028/U+2029, whose encoding starts with 0xE2). Conservative:
// a space inside a string also sends the result to json.Marshal.
func plainDetails(d json.RawMessage) bool {
	if len(d) == 0 {
		return true
	}
	for _, c := range d {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	v := fastDecoder{jsonr.Reader{B: d}}
	return !v.Peek('n') && v.Skip(maxFastDepth) && v.I == len(d)
}
