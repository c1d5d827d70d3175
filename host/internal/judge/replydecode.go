package judge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// tokenNeed says how much of a reply's logprobs the caller reads.
type tokenNeed int

const (
	// needScoreTokens keeps what package score reads when the caller did
	// not ask for the tokens: every generated token's text and logprob (the
	// score is located in their concatenation), the top alternatives of the
	// tokens that hold a digit and of the token after each (the score's
	// position and the path it continues on), and, for the rest, only an
	// alternative with two adjacent digits (score's evidence that the
	// tokenizer writes numbers as one token). Everything else is skipped.
	needScoreTokens tokenNeed = iota
	// needAllTokens keeps every alternative: the caller asked for the tokens.
	needAllTokens
)

// decodeCompletion reads a 2xx body. Anything but a chat completion with
// choices is a failure that keeps what the server said: an HTML login
// page, an {"error": …} sent with HTTP 200, an empty object.
//
// A body is decoded in one pass by replyDecoder, which keeps only what
// need asks for and allocates a handful of times per reply however many
// alternatives it carries. It takes the ordinary shape of a chat
// completion only; whatever it is unsure of (a syntax error, a field of an
// unexpected type, a duplicated or oddly spelled key, a string it cannot
// unescape exactly as encoding/json does, no choices) goes to
// decodeReference, so the result — completion or failure, word for word —
// is always what encoding/json makes of the body.
func decodeCompletion(contentType string, body []byte, need tokenNeed) (completion, *failure) {
	if contentType != "" && !strings.Contains(contentType, "json") {
		mediaType, _, _ := strings.Cut(contentType, ";")
		return completion{}, &failure{kind: failUnparseable,
			detail: withWords(fmt.Sprintf("the body is %s, not JSON", strings.TrimSpace(mediaType)), body)}
	}
	d := decoders.Get().(*replyDecoder)
	c, ok := d.decode(body, need)
	d.release()
	if ok {
		return c, nil
	}
	return decodeReference(body)
}

// decoders recycles the decoders' scratch space between replies.
var decoders = sync.Pool{New: func() any { return new(replyDecoder) }}

// maxPooledScratch bounds the scratch a pooled decoder keeps: one huge
// reply must not pin its memory for the rest of the run.
const maxPooledScratch = 1 << 20

// maxSkipDepth bounds the nesting the fast decoder follows; deeper bodies
// (legal JSON, never a real completion) go to the reference decoder.
const maxSkipDepth = 64

// span is a decoded string: bytes [off, off+n) of the decoder's text.
type span struct{ off, n int32 }

type altRec struct {
	text    span
	logprob float64
}

type tokenRec struct {
	text     span
	logprob  float64
	alts     int32 // first alternative in replyDecoder.alts
	altCount int32
}

type choiceRec struct {
	index                    int
	content, refusal, finish span
	tokens                   int32 // first token in replyDecoder.tokens
	tokenCount               int32
}

// replyDecoder is a strict, single-pass JSON scanner specialised to the
// chat completion shape. decode fills the scratch records and builds the
// completion from them with one allocation for all strings, one for the
// tokens and one for the alternatives.
type replyDecoder struct {
	buf  []byte
	i    int
	need tokenNeed

	text    []byte // decoded strings, back to back
	tokens  []tokenRec
	alts    []altRec
	choices []choiceRec

	// slowSkip turns the fast paths (alternatives, tokenFast) off:
	// tests and benchmarks compare them with the general path.
	slowSkip bool

	usageSeen         bool // a non-null usage object
	prompt, generated int64
	evidence          bool // an adjacent-digits alternative was kept from a skipped list
}

func (d *replyDecoder) release() {
	d.buf = nil
	if cap(d.text) > maxPooledScratch || cap(d.alts)*16 > maxPooledScratch || cap(d.tokens)*40 > maxPooledScratch {
		return
	}
	decoders.Put(d)
}

// decode returns the completion in body, or false when the reference
// decoder must decide.
func (d *replyDecoder) decode(body []byte, need tokenNeed) (completion, bool) {
	d.buf, d.i, d.need = body, 0, need
	d.text, d.tokens, d.alts, d.choices = d.text[:0], d.tokens[:0], d.alts[:0], d.choices[:0]
	d.usageSeen, d.prompt, d.generated, d.evidence = false, 0, 0, false
	if !d.topLevel() || len(d.choices) == 0 {
		return completion{}, false
	}
	return d.build(), true
}

// build turns the records into a completion.
func (d *replyDecoder) build() completion {
	text := string(d.text)
	str := func(s span) string { return text[s.off : s.off+s.n] }
	var toks []abi.TokenLogprob
	if len(d.tokens) > 0 {
		toks = make([]abi.TokenLogprob, len(d.tokens))
	}
	var tops []abi.TopLogprob
	if len(d.alts) > 0 {
		tops = make([]abi.TopLogprob, len(d.alts))
		for k, a := range d.alts {
			tops[k] = abi.TopLogprob{Token: str(a.text), Logprob: a.logprob}
		}
	}
	for k, t := range d.tokens {
		toks[k] = abi.TokenLogprob{Token: str(t.text), Logprob: t.logprob}
		if t.altCount > 0 {
			toks[k].Top = tops[t.alts : t.alts+t.altCount : t.alts+t.altCount]
		}
	}
	c := completion{choices: make([]choice, 0, len(d.choices))}
	// A usage block of zeros is a placeholder (no real completion has an
	// empty prompt), as unknown as a missing one.
	if d.usageSeen && (d.prompt > 0 || d.generated > 0) {
		c.inputTokens, c.outputTokens = int(max(d.prompt, 0)), int(max(d.generated, 0))
		c.usageKnown = true
	}
	// Servers need not return choices in index order.
	slices.SortStableFunc(d.choices, func(a, b choiceRec) int { return a.index - b.index })
	for _, ch := range d.choices {
		var ct []abi.TokenLogprob
		if ch.tokenCount > 0 {
			ct = toks[ch.tokens : ch.tokens+ch.tokenCount : ch.tokens+ch.tokenCount]
		}
		c.choices = append(c.choices, choice{
			content:      str(ch.content),
			refusal:      str(ch.refusal),
			finishReason: str(ch.finish),
			tokens:       ct,
		})
	}
	return c
}

// The scanner. Every method returns false when the body is not the
// ordinary shape; the caller then stops and the reference decoder runs.

func (d *replyDecoder) ws() {
	i, buf := d.i, d.buf
	for i < len(buf) && buf[i] <= ' ' && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\t' || buf[i] == '\r') {
		i++
	}
	d.i = i
}

// peek skips whitespace and returns the next byte (0 at the end).
func (d *replyDecoder) peek() byte {
	if i := d.i; i < len(d.buf) && d.buf[i] > ' ' {
		return d.buf[i]
	}
	return d.peekSpace()
}

func (d *replyDecoder) peekSpace() byte {
	d.ws()
	if d.i < len(d.buf) {
		return d.buf[d.i]
	}
	return 0
}

func (d *replyDecoder) expect(c byte) bool {
	if d.peek() != c {
		return false
	}
	d.i++
	return true
}

// null consumes a null literal if one comes next.
func (d *replyDecoder) null() bool {
	if d.peek() == 'n' && d.i+4 <= len(d.buf) && string(d.buf[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// object calls member for each key of an object; the key is only valid
// during the call. Keys of the objects the judge reads must be plain
// lowercase ASCII: encoding/json matches field names case-insensitively
// (with Unicode folding), which the reference decoder handles.
func (d *replyDecoder) object(member func(key []byte) bool) bool {
	if !d.expect('{') {
		return false
	}
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		start := d.i + 1
		end, escaped, ok := d.scanString()
		if !ok || escaped {
			return false
		}
		key := d.buf[start:end]
		for _, c := range key {
			if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
				return false
			}
		}
		if !d.expect(':') || !member(key) {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// array calls elem for each element of an array.
func (d *replyDecoder) array(elem func() bool) bool {
	if !d.expect('[') {
		return false
	}
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// once tracks which known keys an object has had: a repeated one goes to
// the reference decoder (encoding/json's merging of repeats is subtle).
type once uint32

func (o *once) first(bit uint32) bool {
	if uint32(*o)&bit != 0 {
		return false
	}
	*o |= once(bit)
	return true
}

func (d *replyDecoder) topLevel() bool {
	var seen once
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if !seen.first(1) {
				return false
			}
			if d.null() {
				return true
			}
			return d.array(d.choice)
		case "usage":
			if !seen.first(2) {
				return false
			}
			if d.null() {
				return true
			}
			return d.usage()
		case "error":
			// A body with choices is a completion whatever its error
			// field says; one without goes to the reference decoder.
			if !seen.first(4) {
				return false
			}
			return d.skip()
		}
		return d.skip()
	})
	if !ok {
		return false
	}
	d.ws()
	return d.i == len(d.buf)
}

func (d *replyDecoder) usage() bool {
	var seen once
	d.usageSeen = true
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return seen.first(1) && d.intField(&d.prompt)
		case "completion_tokens":
			return seen.first(2) && d.intField(&d.generated)
		}
		return d.skip()
	})
}

func (d *replyDecoder) choice() bool {
	if d.peek() != '{' {
		return false
	}
	ch := choiceRec{tokens: int32(len(d.tokens))}
	var seen once
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			var v int64
			if !seen.first(1) || !d.intField(&v) {
				return false
			}
			ch.index = int(v)
			return true
		case "message":
			if !seen.first(2) {
				return false
			}
			if d.null() {
				return true
			}
			return d.message(&ch)
		case "logprobs":
			if !seen.first(4) {
				return false
			}
			if d.null() {
				return true
			}
			return d.logprobs()
		case "finish_reason":
			return seen.first(8) && d.stringField(&ch.finish)
		}
		return d.skip()
	})
	if !ok {
		return false
	}
	ch.tokenCount = int32(len(d.tokens)) - ch.tokens
	d.choices = append(d.choices, ch)
	return true
}

func (d *replyDecoder) message(ch *choiceRec) bool {
	var seen once
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return seen.first(1) && d.stringField(&ch.content)
		case "refusal":
			return seen.first(2) && d.stringField(&ch.refusal)
		}
		return d.skip()
	})
}

func (d *replyDecoder) logprobs() bool {
	var seen once
	return d.object(func(key []byte) bool {
		if string(key) != "content" {
			return d.skip()
		}
		if !seen.first(1) {
			return false
		}
		if d.null() {
			return true
		}
		// A choice's tokens follow each other in d.tokens; package score
		// looks for evidence in one choice's tokens.
		prevDigit := false
		d.evidence = false
		return d.array(func() bool {
			if !d.slowSkip {
				if digit, ok := d.tokenFast(prevDigit); ok {
					prevDigit = digit
					return true
				}
			}
			ok, digit := d.token(prevDigit)
			prevDigit = digit
			return ok
		})
	})
}

// token decodes one generated token. prevDigit says the token before it
// held a digit, so its alternatives continue a possible score's path.
func (d *replyDecoder) token(prevDigit bool) (ok, digit bool) {
	if d.peek() != '{' {
		return false, false
	}
	t := tokenRec{alts: int32(len(d.alts))}
	textSeen := false
	var seen once
	ok = d.object(func(key []byte) bool {
		switch string(key) {
		case "token":
			if !seen.first(1) || !d.stringField(&t.text) {
				return false
			}
			textSeen = true
			digit = hasDigit(d.text[t.text.off : t.text.off+t.text.n])
			return true
		case "logprob":
			return seen.first(2) && d.floatField(&t.logprob)
		case "top_logprobs":
			if !seen.first(4) {
				return false
			}
			if d.null() {
				return true
			}
			// Until its text is known, a token's alternatives may be the
			// score's: keep them.
			return d.alternatives(d.need == needAllTokens || prevDigit || !textSeen || digit)
		}
		return d.skip()
	})
	t.altCount = int32(len(d.alts)) - t.alts
	d.tokens = append(d.tokens, t)
	return ok, digit
}

// alternative decodes one top_logprobs entry, keeping it when keep says
// so, or when it is the first alternative with adjacent digits in the
// choice's skipped lists (package score reads that evidence; see
// needScoreTokens).
func (d *replyDecoder) alternative(keep bool) bool {
	if d.peek() != '{' {
		return false
	}
	objStart := d.i
	var a altRec
	var lp []byte // the logprob's text, parsed only if the entry is kept
	evidence := false
	var seen once
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "token":
			if !seen.first(1) {
				return false
			}
			if keep {
				return d.stringField(&a.text)
			}
			return d.skippedText(&evidence)
		case "logprob":
			if !seen.first(2) {
				return false
			}
			if d.null() {
				return true
			}
			var ok bool
			lp, ok = d.number()
			return ok && d.floatInRange(lp)
		}
		return d.skip()
	})
	if !ok {
		return false
	}
	if !keep && evidence && !d.evidence {
		// Keep it after all: decode its text again, from its object.
		d.evidence = true
		keep = true
		if !d.evidenceText(objStart, &a) {
			return false
		}
	}
	if !keep {
		return true
	}
	if lp != nil {
		f, err := strconv.ParseFloat(string(lp), 64)
		if err != nil {
			return false
		}
		a.logprob = f
	}
	d.alts = append(d.alts, a)
	return true
}

// skippedText checks the string of a skipped alternative and reports
// whether its decoded text has two adjacent digits, without keeping it.
func (d *replyDecoder) skippedText(adjacent *bool) bool {
	if d.null() {
		return true
	}
	if d.peek() != '"' {
		return false
	}
	start := d.i + 1
	end, escaped, ok := d.scanString()
	if !ok {
		return false
	}
	raw := d.buf[start:end]
	if !escaped {
		// Invalid UTF-8 decodes to U+FFFD, never to a digit: the raw
		// bytes have adjacent digits exactly when the text does.
		*adjacent = adjacentDigits(raw)
		return true
	}
	mark := len(d.text)
	d.text, ok = unescape(d.text, raw)
	*adjacent = ok && adjacentDigits(d.text[mark:])
	d.text = d.text[:mark]
	return ok
}

// evidenceText decodes the text of the alternative whose object spans
// d.buf[start:d.i] (rare: once per choice at most).
func (d *replyDecoder) evidenceText(start int, a *altRec) bool {
	end := d.i
	sub := replyDecoder{buf: d.buf[:end], i: start, text: d.text}
	var seen once
	ok := sub.object(func(key []byte) bool {
		if string(key) == "token" {
			return seen.first(1) && sub.stringField(&a.text)
		}
		return sub.skip()
	})
	d.text = sub.text
	return ok && sub.i == end
}

func hasDigit(s []byte) bool {
	for _, c := range s {
		if isASCIIDigit(c) {
			return true
		}
	}
	return false
}

func adjacentDigits(s []byte) bool {
	for k := 1; k < len(s); k++ {
		if isASCIIDigit(s[k]) && isASCIIDigit(s[k-1]) {
			return true
		}
	}
	return false
}

func isASCIIDigit(c byte) bool { return '0' <= c && c <= '9' }

// stringField decodes a string (or leaves *s as it is for null, as
// encoding/json does for a string field).
func (d *replyDecoder) stringField(s *span) bool {
	if d.null() {
		return true
	}
	if d.peek() != '"' {
		return false
	}
	start := d.i + 1
	end, escaped, ok := d.scanString()
	if !ok {
		return false
	}
	raw := d.buf[start:end]
	off := len(d.text)
	if !escaped && utf8.Valid(raw) {
		d.text = append(d.text, raw...)
	} else if d.text, ok = unescape(d.text, raw); !ok {
		return false
	}
	if len(d.text) > 1<<31-1 {
		return false
	}
	*s = span{off: int32(off), n: int32(len(d.text) - off)}
	return true
}

// unescape appends the decoded form of a string's escaped body. It handles
// what encoding/json decodes the same way every time: the short escapes
// and \u escapes outside the surrogate range, in valid UTF-8. A surrogate
// escape or invalid UTF-8 (which encoding/json replaces in its own ways)
// reports false.
func unescape(dst, raw []byte) ([]byte, bool) {
	for k := 0; k < len(raw); {
		c := raw[k]
		if c != '\\' {
			if c < utf8.RuneSelf {
				dst = append(dst, c)
				k++
				continue
			}
			r, size := utf8.DecodeRune(raw[k:])
			if r == utf8.RuneError && size == 1 {
				return dst, false
			}
			dst = append(dst, raw[k:k+size]...)
			k += size
			continue
		}
		if k+1 >= len(raw) {
			return dst, false
		}
		switch raw[k+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[k+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			if k+6 > len(raw) {
				return dst, false
			}
			v, err := strconv.ParseUint(string(raw[k+2:k+6]), 16, 32)
			if err != nil || (0xd800 <= v && v < 0xe000) {
				return dst, false
			}
			dst = utf8.AppendRune(dst, rune(v))
			k += 6
			continue
		default:
			return dst, false
		}
		k += 2
	}
	return dst, true
}

// scanString checks the string starting at d.i (its opening quote) and
// moves past it. end is the index of the closing quote; escaped says it
// holds a backslash.
func (d *replyDecoder) scanString() (end int, escaped, ok bool) {
	end, escaped, ok = stringEnd(d.buf, d.i+1)
	if ok {
		d.i = end + 1
	}
	return end, escaped, ok
}

func isHex(c byte) bool {
	return isASCIIDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// number scans a JSON number and returns its text.
func (d *replyDecoder) number() ([]byte, bool) {
	d.peek()
	start := d.i
	end, _, ok := scanNumber(d.buf, start)
	if !ok {
		return nil, false
	}
	d.i = end
	return d.buf[start:end], true
}

// intField reads an integer the way encoding/json fills an int: null
// leaves it, anything but a decimal integer that fits is refused.
func (d *replyDecoder) intField(v *int64) bool {
	if d.null() {
		return true
	}
	num, ok := d.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || int64(int(n)) != n {
		return false
	}
	*v = n
	return true
}

// floatField reads a float64 the way encoding/json does: null leaves it,
// a number out of range is refused.
func (d *replyDecoder) floatField(v *float64) bool {
	if d.null() {
		return true
	}
	num, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return false
	}
	*v = f
	return true
}

// floatInRange reports whether a number's text parses as a float64, as
// encoding/json requires of a float field. Only a number with an exponent
// can be out of range, so only those are parsed here.
func (d *replyDecoder) floatInRange(num []byte) bool {
	for _, c := range num {
		if c == 'e' || c == 'E' {
			_, err := strconv.ParseFloat(string(num), 64)
			return err == nil
		}
	}
	return true
}

// skip checks and passes over any JSON value.
func (d *replyDecoder) skip() bool {
	var stack [maxSkipDepth]byte // the closing bracket of each open container
	depth := 0
	for {
		// A value.
		switch d.peek() {
		case '{':
			if depth == maxSkipDepth {
				return false
			}
			d.i++
			if d.peek() == '}' {
				d.i++
				break
			}
			stack[depth] = '}'
			depth++
			if !d.key() {
				return false
			}
			continue
		case '[':
			if depth == maxSkipDepth {
				return false
			}
			d.i++
			if c := d.peek(); c == ']' {
				d.i++
				break
			} else if c == '-' || isASCIIDigit(c) {
				// A list of numbers (a token's "bytes"): read it here
				// rather than element by element through the stack.
				if ok, done := d.numbers(); !ok {
					return false
				} else if done {
					break
				}
			}
			stack[depth] = ']'
			depth++
			continue
		case '"':
			if _, _, ok := d.scanString(); !ok {
				return false
			}
		case 't':
			if !d.literal("true") {
				return false
			}
		case 'f':
			if !d.literal("false") {
				return false
			}
		case 'n':
			if !d.literal("null") {
				return false
			}
		default:
			if _, ok := d.number(); !ok {
				return false
			}
		}
		// After a value: close containers, or go on to the next element.
		for {
			if depth == 0 {
				return true
			}
			c := d.peek()
			if c == stack[depth-1] {
				d.i++
				depth--
				continue
			}
			if c != ',' {
				return false
			}
			d.i++
			if stack[depth-1] == '}' && !d.key() {
				return false
			}
			break
		}
	}
}

// numbers passes over the leading numbers of an array whose '[' has been
// read. done says it also passed the closing ']'; otherwise it stopped
// before an element that is not a number, which the caller reads.
func (d *replyDecoder) numbers() (ok, done bool) {
	for {
		if _, ok := d.number(); !ok {
			return false, false
		}
		switch d.peek() {
		case ']':
			d.i++
			return true, true
		case ',':
			d.i++
			if c := d.peek(); c != '-' && !isASCIIDigit(c) {
				return true, false
			}
		default:
			return false, false
		}
	}
}

// key passes over an object key and its colon.
func (d *replyDecoder) key() bool {
	if d.peek() != '"' {
		return false
	}
	if _, _, ok := d.scanString(); !ok {
		return false
	}
	return d.expect(':')
}

func (d *replyDecoder) literal(lit string) bool {
	if d.i+len(lit) > len(d.buf) || string(d.buf[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}
