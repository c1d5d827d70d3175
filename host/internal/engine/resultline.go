package engine

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeLineFast decodes a results line as the writer writes it — compact
// JSON, CaseResult's known keys, no nulls — into r, without encoding/json's
// reflection and its validating pre-scan, which made every walk of
// results.jsonl (summary, JUnit, report, resume, compare) cost ≈ 17 µs
// per 1.2 KB line. With keepDetails the metrics' details are copied as
// encoding/json copies a json.RawMessage; without, they are checked and
// left nil (EachOutcome).
//
// It reports false, leaving r in any state, for anything outside that
// subset — whitespace, unknown, repeated or escaped keys, null, a key
// encoding/json would match only case-insensitively, a number an int
// field cannot hold, invalid UTF-8 in a kept string, nesting deeper than
// maxFastDepth — and the caller decodes the line with encoding/json,
// which then decides. So a line decodes to the same value, and fails with
// the same error, as before (FuzzDecodeLineFast holds it to
// encoding/json).
func decodeLineFast(b []byte, r *CaseResult, keepDetails bool) bool {
	return decodeLineFastShared(b, r, keepDetails, nil)
}

// decodeLineFastShared is decodeLineFast sharing one copy of each short
// string that repeats from line to line — config hash, metric, kind,
// status, score mode, error class — through shared (nil: no sharing), so a
// walk allocates them once rather than per line.
func decodeLineFastShared(b []byte, r *CaseResult, keepDetails bool, shared stringSet) bool {
	d := lineDecoder{b: b, seen: shared}
	if !d.lit('{') {
		return false
	}
	var seen uint8
	for first := true; ; first = false {
		if d.lit('}') {
			if first || seen&7 != 7 {
				// Missing keys are legal JSON but not the writer's; leave
				// them to encoding/json.
				return false
			}
			return d.i == len(d.b)
		}
		if !first && !d.lit(',') {
			return false
		}
		key, ok := d.key()
		if !ok {
			return false
		}
		switch key {
		case "case_id":
			if seen&1 != 0 {
				return false
			}
			seen |= 1
			r.CaseID, ok = d.str()
		case "config_hash":
			if seen&2 != 0 {
				return false
			}
			seen |= 2
			r.ConfigHash, ok = d.shared()
		case "identity":
			if seen&8 != 0 {
				return false
			}
			seen |= 8
			r.Identity, ok = d.shared()
		case "case_digest":
			if seen&32 != 0 {
				return false
			}
			seen |= 32
			r.CaseDigest, ok = d.str()
		case "worker":
			if seen&16 != 0 {
				return false
			}
			seen |= 16
			r.Worker, ok = d.shared()
		case "metrics":
			if seen&4 != 0 {
				return false
			}
			seen |= 4
			ok = d.metrics(r, keepDetails)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
}

// maxFastDepth bounds the nesting decodeLineFast follows in details;
// deeper values go to encoding/json (whose own limit is 10,000).
const maxFastDepth = 64

type lineDecoder struct {
	b []byte
	i int
	// space allows JSON whitespace between tokens (a dataset line);
	// results lines are compact.
	space bool
	seen  stringSet
}

// stringSet holds one copy of each string shared between lines, up to
// maxShared of them (a file cannot make it grow without bound).
type stringSet map[string]string

const maxShared = 1024

// shared reads a string value, as str, returning the set's copy when it
// has one.
func (d *lineDecoder) shared() (string, bool) {
	if d.seen == nil {
		return d.str()
	}
	start := d.i
	raw, escaped, ok := d.strSpan()
	if !ok || escaped || !utf8.Valid(raw) {
		d.i = start
		return d.str()
	}
	if v, ok := d.seen[string(raw)]; ok {
		return v, true
	}
	v := string(raw)
	if len(d.seen) < maxShared {
		d.seen[v] = v
	}
	return v, true
}

// sp passes over whitespace where it is allowed.
func (d *lineDecoder) sp() {
	if !d.space {
		return
	}
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// lit consumes the token c if it is next.
func (d *lineDecoder) lit(c byte) bool {
	d.sp()
	return d.ch(c)
}

// ch consumes the byte c if it is next (inside a token).
func (d *lineDecoder) ch(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// word consumes w if it is next.
func (d *lineDecoder) word(w string) bool {
	d.sp()
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// key reads `"name":` for a name of plain ASCII letters, digits and
// underscores, returned without copying (valid until d.b changes).
func (d *lineDecoder) key() (string, bool) {
	if !d.lit('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			k := unsafe.String(unsafe.SliceData(d.b[start:]), d.i-start)
			d.i++
			return k, d.lit(':')
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_':
			d.i++
		default:
			return "", false
		}
	}
	return "", false
}

// strSpan scans a string, returning its raw contents (between the quotes)
// and whether it holds a backslash. It refuses control characters, as
// JSON does. The closing quote and any backslash are found with
// bytes.IndexByte (vector instructions), control characters eight bytes
// at a time.
func (d *lineDecoder) strSpan() (raw []byte, escaped, ok bool) {
	if !d.lit('"') {
		return nil, false, false
	}
	start := d.i
	for {
		q := bytes.IndexByte(d.b[d.i:], '"')
		if q < 0 {
			return nil, false, false
		}
		seg := d.b[d.i : d.i+q]
		bs := bytes.IndexByte(seg, '\\')
		if bs < 0 {
			if hasControl(seg) {
				return nil, false, false
			}
			d.i += q + 1
			return d.b[start : d.i-1], escaped, true
		}
		// An escape before the quote: check up to it, pass over it, and
		// look for the closing quote again (the quote found may be escaped).
		if hasControl(seg[:bs]) {
			return nil, false, false
		}
		escaped = true
		d.i += bs + 1
		if d.i >= len(d.b) {
			return nil, false, false
		}
		switch d.b[d.i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			d.i++
		case 'u':
			if len(d.b)-d.i < 5 {
				return nil, false, false
			}
			for _, h := range d.b[d.i+1 : d.i+5] {
				if !isHex(h) {
					return nil, false, false
				}
			}
			d.i += 5
		default:
			return nil, false, false
		}
	}
}

// hasControl reports whether b holds a byte below 0x20.
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x-0x20…, setting its high bit
		// where x's own high bit is clear (the classic has-less-than).
		if (x-lo)&^x&hi != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str reads a string value. Escapes and non-ASCII bytes that are not valid
// UTF-8 (which encoding/json replaces with U+FFFD) are left to
// encoding/json.
func (d *lineDecoder) str() (string, bool) {
	raw, escaped, ok := d.strSpan()
	if !ok || escaped {
		if ok && escaped {
			return unquoteEscaped(raw)
		}
		return "", false
	}
	for _, c := range raw {
		if c >= utf8.RuneSelf {
			if !utf8.Valid(raw) {
				return "", false
			}
			break
		}
	}
	return string(raw), true
}

// unquoteEscaped decodes a string with escapes as encoding/json's unquote
// does: the writer escapes quotes, backslashes, control characters and,
// as json.Encoder does by default, <, >, & and U+2028/U+2029 (\u003c…).
// A \u surrogate pair makes one rune and a lone surrogate U+FFFD, as
// there; invalid UTF-8 goes back to encoding/json.
func unquoteEscaped(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			if c >= utf8.RuneSelf {
				_, size := utf8.DecodeRune(raw[i:])
				if size == 1 {
					return "", false
				}
				out = append(out, raw[i:i+size]...)
				i += size - 1
				continue
			}
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			rr := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(rr) {
				if len(raw)-i > 6 && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if dec := utf16.DecodeRune(rr, hex4(raw[i+3:])); dec != unicode.ReplacementChar {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				rr = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, rr)
		default:
			return "", false
		}
	}
	return string(out), true
}

// hex4 is the value of four hex digits strSpan has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// numSpan scans a JSON number.
func (d *lineDecoder) numSpan() ([]byte, bool) {
	d.sp()
	start := d.i
	d.ch('-')
	switch {
	case d.ch('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.ch('.') && !d.digits() {
		return nil, false
	}
	if d.ch('e') || d.ch('E') {
		if !d.ch('+') {
			d.ch('-')
		}
		if !d.digits() {
			return nil, false
		}
	}
	return d.b[start:d.i], true
}

// digits consumes one or more digits.
func (d *lineDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// float reads a number into a float64 as encoding/json does
// (strconv.ParseFloat; out of range is its error, so not here).
func (d *lineDecoder) float() (float64, bool) {
	n, ok := d.numSpan()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64)
	return f, err == nil
}

// int reads a number into an int as encoding/json does (strconv.ParseInt:
// a fraction, an exponent or overflow is its error, so not here).
func (d *lineDecoder) int() (int, bool) {
	n, ok := d.numSpan()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(n), len(n)), 10, strconv.IntSize)
	return int(v), err == nil
}

func (d *lineDecoder) bool() (bool, bool) {
	switch {
	case d.word("true"):
		return true, true
	case d.word("false"):
		return false, true
	}
	return false, false
}

// skip checks and passes over any JSON value, as encoding/json's scanner
// accepts it for a json.RawMessage (no UTF-8 check in strings).
func (d *lineDecoder) skip(depth int) bool {
	d.sp()
	if d.i >= len(d.b) || depth > maxFastDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, ok := d.strSpan()
		return ok
	case c == '{':
		d.i++
		if d.lit('}') {
			return true
		}
		for {
			if _, _, ok := d.strSpan(); !ok || !d.lit(':') || !d.skip(depth+1) {
				return false
			}
			if d.lit('}') {
				return true
			}
			if !d.lit(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		if d.lit(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.lit(']') {
				return true
			}
			if !d.lit(',') {
				return false
			}
		}
	case c == 't':
		return d.word("true")
	case c == 'f':
		return d.word("false")
	case c == 'n':
		return d.word("null")
	default:
		_, ok := d.numSpan()
		return ok
	}
}

func (d *lineDecoder) metrics(r *CaseResult, keepDetails bool) bool {
	if !d.lit('[') {
		return false
	}
	r.Metrics = make([]MetricResult, 0, 1)
	if d.lit(']') {
		return true
	}
	for {
		r.Metrics = append(r.Metrics, MetricResult{})
		if !d.metric(&r.Metrics[len(r.Metrics)-1], keepDetails) {
			return false
		}
		if d.lit(']') {
			return true
		}
		if !d.lit(',') {
			return false
		}
	}
}

// Bits of the metric keys seen, so a repeated key (where encoding/json
// keeps the last) goes to encoding/json.
const (
	seenMetric = 1 << iota
	seenKind
	seenStatus
	seenGated
	seenScore
	seenThreshold
	seenReason
	seenScoreMode
	seenErrorClass
	seenVerdictNote
	seenDetails
	seenUsage
	seenLatency
	seenFuel
)

func (d *lineDecoder) metric(m *MetricResult, keepDetails bool) bool {
	if !d.lit('{') {
		return false
	}
	var seen uint32
	for first := true; ; first = false {
		if d.lit('}') {
			return true
		}
		if !first && !d.lit(',') {
			return false
		}
		key, ok := d.key()
		if !ok {
			return false
		}
		var bit uint32
		switch key {
		case "metric":
			bit = seenMetric
			m.Metric, ok = d.shared()
		case "kind":
			bit = seenKind
			m.Kind, ok = d.shared()
		case "status":
			bit = seenStatus
			m.Status, ok = d.shared()
		case "gated":
			bit = seenGated
			m.Gated, ok = d.bool()
		case "score":
			bit = seenScore
			var f float64
			f, ok = d.float()
			m.Score = &f
		case "threshold":
			bit = seenThreshold
			m.Threshold, ok = d.float()
		case "reason":
			bit = seenReason
			m.Reason, ok = d.str()
		case "score_mode":
			bit = seenScoreMode
			m.ScoreMode, ok = d.shared()
		case "error_class":
			bit = seenErrorClass
			m.ErrorClass, ok = d.shared()
		case "verdict_note":
			bit = seenVerdictNote
			m.VerdictNote, ok = d.str()
		case "details":
			bit = seenDetails
			start := d.i
			ok = d.skip(0)
			if ok && keepDetails {
				m.Details = append([]byte(nil), d.b[start:d.i]...)
			}
		case "usage":
			bit = seenUsage
			ok = d.usage(&m.Usage)
		case "latency_ms":
			bit = seenLatency
			m.LatencyMS, ok = d.float()
		case "fuel":
			bit = seenFuel
			var n int
			n, ok = d.int()
			ok = ok && n >= 0
			m.Fuel = uint64(n)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

func (d *lineDecoder) usage(u *JudgeUsage) bool {
	if !d.lit('{') {
		return false
	}
	var seen uint16
	for first := true; ; first = false {
		if d.lit('}') {
			return true
		}
		if !first && !d.lit(',') {
			return false
		}
		key, ok := d.key()
		if !ok {
			return false
		}
		var bit uint16
		switch key {
		case "requests":
			bit = 1
			u.Requests, ok = d.int()
		case "calls":
			bit = 2
			u.Calls, ok = d.int()
		case "http_attempts":
			bit = 4
			u.Attempts, ok = d.int()
		case "cache_hits":
			bit = 8
			u.CacheHits, ok = d.int()
		case "input_tokens":
			bit = 16
			u.InputTokens, ok = d.int()
		case "output_tokens":
			bit = 32
			u.OutputTokens, ok = d.int()
		case "usd":
			bit = 64
			u.USD, ok = d.float()
		case "usage_unknown":
			bit = 128
			u.UsageUnknown, ok = d.int()
		case "replayed":
			bit = 256
			u.Replayed, ok = d.int()
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// objectMember is one key and its raw value in a JSON object.
type objectMember struct {
	key string
	val []byte // the value's bytes, without surrounding whitespace
}

// splitObjectFast splits a JSON object into its members in order, as
// json.Unmarshal into a map[string]json.RawMessage would give them (same
// keys, same raw values), appending to members. It reports false for
// anything it leaves to encoding/json: escaped or invalid-UTF-8 keys, a
// repeated key (the map keeps the last), nesting deeper than
// maxFastDepth, and any syntax error, whose message is encoding/json's.
func splitObjectFast(raw []byte, members []objectMember) ([]objectMember, bool) {
	d := lineDecoder{b: raw, space: true}
	if !d.lit('{') {
		return members, false
	}
	if !d.lit('}') {
		for {
			k, escaped, ok := d.strSpan()
			if !ok || escaped || !d.lit(':') {
				return members, false
			}
			for _, c := range k {
				if c >= utf8.RuneSelf {
					if !utf8.Valid(k) {
						return members, false
					}
					break
				}
			}
			for _, m := range members {
				if m.key == string(k) {
					return members, false
				}
			}
			d.sp()
			start := d.i
			if !d.skip(1) {
				return members, false
			}
			members = append(members, objectMember{key: string(k), val: raw[start:d.i]})
			if d.lit('}') {
				break
			}
			if !d.lit(',') {
				return members, false
			}
		}
	}
	d.sp()
	return members, d.i == len(d.b)
}
