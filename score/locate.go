package score

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Label ranks of a number literal: how strongly the text before it says
// "this is the score".
const (
	unlabelled = iota
	bareLabel  // Score: 7, **Score:** 7, score = 7
	jsonKey    // "score": 7
)

// literal is one number written in a text.
type literal struct {
	start, end  int  // the whole literal: sign, digits, ".0" suffix
	ds, de      int  // the integer part's digits
	neg         bool // a '-' sign belongs to the literal
	value       int  // signed value; meaningful when ok
	ok          bool // an integer (no fraction or an all-zero one) that fits in an int
	label       int  // unlabelled, bareLabel or jsonKey
	denominator bool // the 10 of "7/10" or "7 out of 10"
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// gluedRune reports whether r glued to a digit run makes it part of a word
// ("gpt4", "7a", "step_2").
func gluedRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// literals lists the number literals of s in order. A literal is a run of
// ASCII digits not glued to a letter, digit or '_' on either side,
// optionally followed by a fraction ("7.0", "7.5"; only an all-zero fraction
// keeps it an integer) and, when allowNeg, preceded by a '-' sign that does
// not itself follow a letter or digit ("1-10" is a range, not -10). Digits
// after a '.' that follows a digit belong to a dotted number ("1.2.3") and
// start no literal.
func literals(s, field string, allowNeg bool) []literal {
	return appendLiterals(nil, s, field, allowNeg)
}

// appendLiterals is literals appending to out, which a caller may back
// with an array of its own.
func appendLiterals(out []literal, s, field string, allowNeg bool) []literal {
	n := len(s)
	for i := 0; i < n; {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < n && isDigit(s[j]) {
			j++
		}
		end, isInt := j, true
		if j+1 < n && s[j] == '.' && isDigit(s[j+1]) {
			k := j + 1
			for k < n && isDigit(s[k]) {
				k++
			}
			isInt = strings.Trim(s[j+1:k], "0") == ""
			end = k
		}
		next := end
		if i > 0 {
			r, _ := utf8.DecodeLastRuneInString(s[:i])
			if gluedRune(r) || (s[i-1] == '.' && i >= 2 && isDigit(s[i-2])) {
				i = next
				continue
			}
		}
		if end < n {
			r, _ := utf8.DecodeRuneInString(s[end:])
			if gluedRune(r) {
				i = next
				continue
			}
		}
		l := literal{start: i, end: end, ds: i, de: j}
		if allowNeg && i > 0 && s[i-1] == '-' {
			signOK := i == 1
			if !signOK {
				r, _ := utf8.DecodeLastRuneInString(s[:i-1])
				signOK = !gluedRune(r)
			}
			if signOK {
				l.neg, l.start = true, i-1
			}
		}
		if v, err := strconv.Atoi(s[i:j]); err == nil && isInt {
			if l.neg {
				v = -v
			}
			l.value, l.ok = v, true
		}
		l.label = labelBefore(s[:l.start], field)
		l.denominator = denominatorBefore(s[:l.start])
		out = append(out, l)
		i = next
	}
	return out
}

const spaces = " \t\r\n"

// labelBefore ranks the text that precedes a literal: `"score": ` is a JSON
// key, `Score: `, `**Score:** ` or `score = ` a bare label.
func labelBefore(p, field string) int {
	p = strings.TrimRight(p, spaces)
	p = strings.TrimRight(p, `"'*`)
	p = strings.TrimRight(p, spaces)
	if p == "" || (p[len(p)-1] != ':' && p[len(p)-1] != '=') {
		return unlabelled
	}
	p = strings.TrimRight(p[:len(p)-1], spaces+"*")
	quoted := `"` + field + `"`
	if len(p) >= len(quoted) && strings.EqualFold(p[len(p)-len(quoted):], quoted) {
		if k := len(p) - len(quoted); k == 0 || p[k-1] != '\\' {
			return jsonKey
		}
		return unlabelled // an escaped key inside a JSON string
	}
	p = strings.TrimRight(p, `"'*`)
	if len(p) < len(field) || !strings.EqualFold(p[len(p)-len(field):], field) {
		return unlabelled
	}
	if k := len(p) - len(field); k > 0 {
		if r, _ := utf8.DecodeLastRuneInString(p[:k]); gluedRune(r) || r == '\\' {
			return unlabelled
		}
	}
	return bareLabel
}

// denominatorBefore reports whether the text before a literal makes it the
// denominator of a fraction-style score ("7/10", "7 out of 10").
func denominatorBefore(p string) bool {
	p = strings.TrimRight(p, spaces)
	switch {
	case strings.HasSuffix(p, "/"):
		p = strings.TrimRight(p[:len(p)-1], spaces)
	case len(p) >= 6 && strings.EqualFold(p[len(p)-6:], "out of"):
		p = strings.TrimRight(p[:len(p)-6], spaces)
	default:
		return false
	}
	return p != "" && isDigit(p[len(p)-1])
}

// pick returns the index of the literal taken as the score, scanning from
// the end: the last acceptable literal under a JSON key, else the last under
// a bare label, else the last one at all. Denominators are never taken.
// It returns -1 when none is acceptable.
func pick(lits []literal, accept func(literal) bool) int {
	for rank := jsonKey; rank >= unlabelled; rank-- {
		for i := len(lits) - 1; i >= 0; i-- {
			l := lits[i]
			if l.ok && !l.denominator && l.label >= rank && accept(l) {
				return i
			}
		}
	}
	return -1
}

// jsonScore reads the score field of a JSON object reply: the whole reply,
// or the span from its first '{' to its last '}' (code fences, prose
// around). found is false when the reply is no JSON object or lacks the
// field; err is set when the field is there but holds no integer.
func jsonScore(content, field string) (v int, found bool, err error) {
	var obj map[string]json.RawMessage
	dec := func(s string) bool {
		obj = nil
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		return d.Decode(&obj) == nil && obj != nil && strings.TrimSpace(s[d.InputOffset():]) == ""
	}
	s := strings.TrimSpace(content)
	if !dec(s) {
		a, b := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
		if a < 0 || b <= a || !dec(s[a:b+1]) {
			return 0, false, nil
		}
	}
	raw, ok := obj[field]
	if !ok {
		for k, r := range obj {
			if strings.EqualFold(k, field) {
				raw, ok = r, true
				break
			}
		}
	}
	if !ok {
		return 0, false, nil
	}
	raw = bytes.TrimSpace(raw)
	text := string(raw)
	var str string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
		text = strings.TrimSpace(str)
	}
	if v, ok := integral(text); ok {
		return v, true, nil
	}
	return 0, true, fmt.Errorf("%w: score field %q is %s, not an integer", ErrNoScore, field, raw)
}

// integral parses a decimal integer, allowing an all-zero fraction ("7.0").
func integral(s string) (int, bool) {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if i+1 == len(s) || strings.Trim(s[i+1:], "0") != "" {
			return 0, false
		}
		s = s[:i]
	}
	t := strings.TrimPrefix(s, "-")
	if t == "" || strings.TrimLeft(t, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// findScore determines the integer score of a reply that came without a
// parsed one: the reply's JSON score field if it is a JSON object, else the
// last integer inside the range (labelled ones first, see pick). content is
// used when non-blank, else the tokens' text.
func findScore(content, tokensText, field string, lo, hi int) (int, error) {
	src := content
	if strings.TrimSpace(src) == "" {
		src = tokensText
	}
	if strings.TrimSpace(src) == "" {
		return 0, fmt.Errorf("%w: the reply is empty", ErrNoScore)
	}
	if v, found, err := jsonScore(src, field); err != nil {
		return 0, err
	} else if found {
		if v < lo || v > hi {
			return 0, fmt.Errorf("%w: score field %q is %d, outside [%d,%d]", ErrNoScore, field, v, lo, hi)
		}
		return v, nil
	}
	lits := literals(src, field, lo < 0)
	if i := pick(lits, func(l literal) bool { return lo <= l.value && l.value <= hi }); i >= 0 {
		return lits[i].value, nil
	}
	if len(lits) == 0 {
		return 0, fmt.Errorf("%w: no number in the reply %s", ErrNoScore, excerpt(src))
	}
	const show = 8
	var found []string
	for i := len(lits) - 1; i >= 0 && len(found) < show; i-- {
		found = append(found, src[lits[i].start:lits[i].end])
	}
	more := ""
	if len(lits) > show {
		more = ", ..."
	}
	return 0, fmt.Errorf("%w: no integer in [%d,%d] in the reply; found (last first) %s%s",
		ErrNoScore, lo, hi, strings.Join(found, ", "), more)
}

// excerpt quotes at most the last 80 bytes of s for an error message.
func excerpt(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "..." + strconv.Quote(s[cut:])
}
