package geval

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentanvil/anvil/internal/jsonw"
)

// The kind decodes one judge reply and encodes one Details per case; with
// the prompt rendered once per metric these were most of its remaining
// CPU. The hand-written decoder and encoder below give exactly what
// encoding/json gives, or say they are not sure and let it do the work:
// FuzzDecodeReply and FuzzAppendDetails compare them with it.

// reply is the scoring reply as the kind reads it.
type reply struct {
	Reason string `json:"reason"`
	Score  *int   `json:"score"`
}

// decodeReply is json.Unmarshal(b, &r) for a fresh r: the fast path takes
// an object of at most one "reason" (a string) and one "score" (an
// integer), in either order, with JSON whitespace; anything else (other
// keys, null, \u escapes, invalid UTF-8, a number that is not a plain
// int) goes to encoding/json, whose error messages are kept.
func decodeReply(b []byte) (reply, error) {
	if r, ok := quickReply(b); ok {
		return r, nil
	}
	var r reply
	err := json.Unmarshal(b, &r)
	return r, err
}

func quickReply(b []byte) (r reply, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return r, false
	}
	var haveReason bool
	for first := true; ; first = false {
		i = skipWS(b, i+1)
		if i >= len(b) {
			return r, false
		}
		if b[i] == '}' && first {
			break
		}
		key, j, ok := quickString(b, i)
		if !ok {
			return r, false
		}
		if i = skipWS(b, j); i >= len(b) || b[i] != ':' {
			return r, false
		}
		i = skipWS(b, i+1)
		switch key {
		case "reason":
			if haveReason {
				return r, false
			}
			if r.Reason, i, ok = quickString(b, i); !ok {
				return r, false
			}
			haveReason = true
		case "score":
			if r.Score != nil {
				return r, false
			}
			n, j, ok := quickInt(b, i)
			if !ok {
				return r, false
			}
			r.Score, i = &n, j
		default:
			return r, false
		}
		if i = skipWS(b, i); i >= len(b) {
			return r, false
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return r, false
		}
	}
	if skipWS(b, i+1) != len(b) {
		return r, false
	}
	return r, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// quickString decodes the string at b[i] and returns the index after it:
// valid UTF-8, no control characters, escapes other than \uXXXX.
func quickString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	ascii, escaped := true, false
	j := start
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			break
		}
		switch {
		case c < 0x20:
			return "", 0, false
		case c == '\\':
			j++
			if j >= len(b) {
				return "", 0, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return "", 0, false
			}
			escaped = true
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if j >= len(b) {
		return "", 0, false
	}
	raw := b[start:j]
	if !ascii && !utf8.Valid(raw) {
		return "", 0, false
	}
	if !escaped {
		return string(raw), j + 1, true
	}
	out := make([]byte, 0, len(raw))
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if c == '\\' {
			k++
			switch c = raw[k]; c {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
		}
		out = append(out, c)
	}
	return string(out), j + 1, true
}

// quickInt decodes the integer at b[i]: -?(0|[1-9][0-9]*), at most 18
// digits (so it fits an int), followed by what may follow a value.
func quickInt(b []byte, i int) (int, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	nd := j - digits
	if nd == 0 || nd > 18 || nd > 1 && b[digits] == '0' {
		return 0, 0, false
	}
	if j < len(b) {
		switch b[j] {
		case ' ', '\t', '\n', '\r', ',', '}':
		default:
			return 0, 0, false
		}
	}
	n, err := strconv.Atoi(string(b[i:j]))
	return n, j, err == nil
}

// marshalDetails is json.Marshal(d).
func marshalDetails(d *Details) ([]byte, error) {
	if b, ok := appendDetails(make([]byte, 0, detailsSizeHint(d)), d); ok {
		return b, nil
	}
	return json.Marshal(d)
}

func detailsSizeHint(d *Details) int {
	n := 512
	for _, s := range d.Steps {
		n += len(s) + 3
	}
	for _, s := range d.Warnings {
		n += len(s) + 3
	}
	n += 48 * len(d.Candidates)
	if d.RubricBand != nil {
		n += len(d.RubricBand.ExpectedOutcome)
	}
	return n
}

// appendDetails appends what json.Marshal(d) writes, field by field in
// Details' order with its omitempty rules. ok is false for a float that
// json.Marshal refuses (NaN, ±Inf), whose error it leaves to it.
func appendDetails(b []byte, d *Details) (_ []byte, ok bool) {
	b = append(b, `{"steps":`...)
	b = appendStrings(b, d.Steps)
	b = append(b, `,"steps_source":`...)
	b = jsonw.AppendString(b, d.StepsSource)
	b = append(b, `,"raw_score":`...)
	b = strconv.AppendInt(b, int64(d.RawScore), 10)
	b = append(b, `,"weighted_score":`...)
	if b, ok = appendFloat(b, d.WeightedScore); !ok {
		return b, false
	}
	b = append(b, `,"score_mode":`...)
	b = jsonw.AppendString(b, d.ScoreMode)
	if d.ScoreCause != "" {
		b = append(b, `,"score_cause":`...)
		b = jsonw.AppendString(b, d.ScoreCause)
	}
	if len(d.Candidates) > 0 {
		b = append(b, `,"candidates":[`...)
		for i, c := range d.Candidates {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"value":`...)
			b = strconv.AppendInt(b, int64(c.Value), 10)
			b = append(b, `,"probability":`...)
			if b, ok = appendFloat(b, c.Probability); !ok {
				return b, false
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if d.Spread != 0 {
		b = append(b, `,"score_spread":`...)
		if b, ok = appendFloat(b, d.Spread); !ok {
			return b, false
		}
	}
	b = append(b, `,"score_range":[`...)
	b = strconv.AppendInt(b, int64(d.ScoreRange[0]), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(d.ScoreRange[1]), 10)
	b = append(b, ']')
	if rb := d.RubricBand; rb != nil {
		b = append(b, `,"rubric_band":{"score_range":`...)
		if rb.ScoreRange == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, v := range rb.ScoreRange {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(v), 10)
			}
			b = append(b, ']')
		}
		b = append(b, `,"expected_outcome":`...)
		b = jsonw.AppendString(b, rb.ExpectedOutcome)
		b = append(b, '}')
	}
	if d.StrictMode {
		b = append(b, `,"strict_mode":true`...)
	}
	b = append(b, `,"prompt_version":`...)
	b = jsonw.AppendString(b, d.PromptVersion)
	b = append(b, `,"usage":`...)
	if b, ok = appendUsage(b, d.Usage); !ok {
		return b, false
	}
	if d.StepsUsage != nil {
		b = append(b, `,"steps_usage":`...)
		if b, ok = appendUsage(b, d.StepsUsage); !ok {
			return b, false
		}
	}
	if len(d.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		b = appendStrings(b, d.Warnings)
	}
	return append(b, '}'), true
}

func appendUsage(b []byte, u *Usage) (_ []byte, ok bool) {
	if u == nil {
		return append(b, "null"...), true
	}
	b = append(b, '{')
	if u.Model != "" {
		b = append(b, `"model":`...)
		b = jsonw.AppendString(b, u.Model)
		b = append(b, ',')
	}
	b = append(b, `"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = append(b, `,"usd":`...)
	if b, ok = appendFloat(b, u.USD); !ok {
		return b, false
	}
	b = append(b, `,"cache_hit":`...)
	b = strconv.AppendBool(b, u.CacheHit)
	return append(b, '}'), true
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, s)
	}
	return append(b, ']')
}

// appendFloat writes f as encoding/json does, or reports false for what
// it refuses (NaN, the infinities).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if !jsonw.Finite(f) {
		return b, false
	}
	return jsonw.AppendFloat(b, f), true
}
