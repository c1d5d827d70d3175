package openaiwire

import (
	"bytes"
	"reflect"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
)

// The hand-written path: a choice's logprobs.content read token by token
// from the decoder json.Unmarshal hands it (UnmarshalJSONFrom).
//
// A scoring reply with 20 top_logprobs per token is almost all
// alternatives package score never reads. json.Unmarshal of the plain
// structs decodes every one of them, a string and an allocation each, and
// was the largest cost of a judge call on the host; here a list nobody
// reads is passed over with one ReadValue (jsontext checks its syntax,
// UTF-8 and names without decoding it), and the strings that are kept are
// unquoted into one buffer and made into one string per choice
// (bench/README.md has the numbers). What it accepts, refuses and keeps is
// held to DecodeGeneric (TestDecodeMatchesGeneric, FuzzDecode).

// scoreTokens and allTokens are logprobs.content read by readTokens, with
// NeedScore and NeedAll.
type (
	scoreTokens struct{ list []abi.TokenLogprob }
	allTokens   struct{ list []abi.TokenLogprob }
)

func (l *scoreTokens) UnmarshalJSONFrom(dec *jsontext.Decoder) (err error) {
	l.list, err = readTokens(dec, NeedScore)
	return err
}

func (l *allTokens) UnmarshalJSONFrom(dec *jsontext.Decoder) (err error) {
	l.list, err = readTokens(dec, NeedAll)
	return err
}

func (l scoreTokens) tokens() []abi.TokenLogprob { return l.list }
func (l allTokens) tokens() []abi.TokenLogprob   { return l.list }

// span is a decoded string: bytes [off, off+n) of scratch.text.
type span struct{ off, n int }

type tokenRec struct {
	text     span
	logprob  float64
	alts     int // first alternative in scratch.alts
	altCount int
}

type altRec struct {
	text    span
	logprob float64
}

// scratch is where one token list is decoded before it is built.
type scratch struct {
	text []byte // decoded strings, back to back
	toks []tokenRec
	alts []altRec
}

// scratches recycles the scratch space between lists.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledScratch bounds the scratch a pooled list keeps: one huge reply
// must not pin its memory for the rest of the run.
const maxPooledScratch = 1 << 20

func (s *scratch) release() {
	const altBytes, tokenBytes = 24, 40 // sizes of altRec and tokenRec
	if cap(s.text) > maxPooledScratch || cap(s.alts)*altBytes > maxPooledScratch || cap(s.toks)*tokenBytes > maxPooledScratch {
		return
	}
	scratches.Put(s)
}

// The Go types a mistyped value is reported against: the plain structs'
// (genericTokens), as json.Unmarshal of them reports it.
var (
	stringType  = reflect.TypeFor[string]()
	float64Type = reflect.TypeFor[float64]()
	tokensType  = reflect.TypeFor[genericTokens]()
	tokenType   = tokensType.Elem()
	altsType    = func() reflect.Type {
		f, _ := tokenType.FieldByName("TopLogprobs")
		return f.Type
	}()
)

// readTokens reads a logprobs.content list (or null) whole, keeping what
// need says.
func readTokens(dec *jsontext.Decoder, need Need) ([]abi.TokenLogprob, error) {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return nil, err
	case '[':
	default:
		return nil, mistyped(dec, tokensType)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	s := scratches.Get().(*scratch)
	defer s.release()
	s.text, s.toks, s.alts = s.text[:0], s.toks[:0], s.alts[:0]
	prevDigit := false
	for dec.PeekKind() != ']' {
		digit, err := s.token(dec, need, prevDigit)
		if err != nil {
			return nil, err
		}
		prevDigit = digit
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return s.build(), nil
}

// token reads one generated token (or null). prevDigit says the token
// before it held a digit, so its alternatives continue a possible score's
// path; digit says this one holds a digit.
func (s *scratch) token(dec *jsontext.Decoder, need Need, prevDigit bool) (digit bool, err error) {
	switch dec.PeekKind() {
	case 'n':
		s.toks = append(s.toks, tokenRec{alts: len(s.alts)})
		_, err := dec.ReadToken()
		return false, err
	case '{':
	default:
		return false, mistyped(dec, tokenType)
	}
	if _, err := dec.ReadToken(); err != nil {
		return false, err
	}
	t := tokenRec{alts: len(s.alts)}
	textSeen := false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return false, err
		}
		switch member(name) {
		case memberToken:
			if t.text, err = s.str(dec); err != nil {
				return false, err
			}
			textSeen = true
			digit = hasDigit(s.text[t.text.off : t.text.off+t.text.n])
		case memberLogprob:
			if t.logprob, err = readFloat(dec); err != nil {
				return false, err
			}
		case memberTop:
			// Until its text is known, a token's alternatives may be the
			// score's: they are read, and dropped below if not.
			err = s.alternatives(dec, need == NeedAll || prevDigit || !textSeen || digit)
		default:
			_, err = dec.ReadValue()
		}
		if err != nil {
			return false, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false, err
	}
	if need == NeedScore && !prevDigit && !digit {
		s.alts = s.alts[:t.alts]
	}
	t.altCount = len(s.alts) - t.alts
	s.toks = append(s.toks, t)
	return digit, nil
}

// alternatives reads a top_logprobs list (or null), decoding it when keep
// says so and otherwise only checking it as JSON.
func (s *scratch) alternatives(dec *jsontext.Decoder, keep bool) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return err
	case '[':
	default:
		return mistyped(dec, altsType)
	}
	if !keep {
		_, err := dec.ReadValue()
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		if err := s.alternative(dec); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// alternative reads one top_logprobs entry (or null).
func (s *scratch) alternative(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		s.alts = append(s.alts, altRec{})
		_, err := dec.ReadToken()
		return err
	case '{':
	default:
		return mistyped(dec, altsType.Elem())
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var a altRec
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		switch member(name) {
		case memberToken:
			a.text, err = s.str(dec)
		case memberLogprob:
			a.logprob, err = readFloat(dec)
		default:
			_, err = dec.ReadValue()
		}
		if err != nil {
			return err
		}
	}
	s.alts = append(s.alts, a)
	_, err := dec.ReadToken()
	return err
}

// The members of a token and an alternative the judge reads.
const (
	memberOther = iota
	memberToken
	memberLogprob
	memberTop
)

// member is the member a quoted object name names. Names are matched
// exactly, as json.Unmarshal matches them; one spelled with escapes (no
// server's) is unquoted first.
func member(quoted jsontext.Value) int {
	if bytes.IndexByte(quoted, '\\') >= 0 {
		name, err := jsontext.AppendUnquote(nil, quoted)
		if err != nil {
			return memberOther // the decoder has checked it: not reached
		}
		quoted = append(append([]byte{'"'}, name...), '"')
	}
	switch string(quoted) {
	case `"token"`:
		return memberToken
	case `"logprob"`:
		return memberLogprob
	case `"top_logprobs"`:
		return memberTop
	}
	return memberOther
}

// str decodes a string (null is the empty one, as for a Go string) onto
// s.text.
func (s *scratch) str(dec *jsontext.Decoder) (span, error) {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return span{}, err
	case '"':
	default:
		return span{}, mistyped(dec, stringType)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return span{}, err
	}
	off := len(s.text)
	if bytes.IndexByte(v, '\\') < 0 {
		// The decoder has checked it is valid UTF-8.
		s.text = append(s.text, v[1:len(v)-1]...)
	} else if s.text, err = jsontext.AppendUnquote(s.text, v); err != nil {
		return span{}, err
	}
	return span{off: off, n: len(s.text) - off}, nil
}

// readFloat decodes a float64 (null is 0), refusing a number out of its
// range as json.Unmarshal does.
func readFloat(dec *jsontext.Decoder) (float64, error) {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return 0, err
	case '0':
	default:
		return 0, mistyped(dec, float64Type)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, &json.SemanticError{JSONPointer: dec.StackPointer(), JSONKind: '0', JSONValue: v.Clone(), GoType: float64Type, Err: strconv.ErrRange}
	}
	return f, nil
}

// mistyped is the error for a value of the wrong kind where a value of
// goType was expected: the syntax error, if the value is not JSON at all.
func mistyped(dec *jsontext.Decoder, goType reflect.Type) error {
	kind := dec.PeekKind()
	if _, err := dec.ReadValue(); err != nil {
		return err
	}
	return &json.SemanticError{JSONPointer: dec.StackPointer(), JSONKind: kind, GoType: goType}
}

func hasDigit(s []byte) bool {
	for _, c := range s {
		if '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

// build makes the list from the records, with one allocation for all its
// strings, one for the tokens and one for the alternatives.
func (s *scratch) build() []abi.TokenLogprob {
	if len(s.toks) == 0 {
		return nil
	}
	text := string(s.text)
	str := func(sp span) string { return text[sp.off : sp.off+sp.n] }
	var tops []abi.TopLogprob
	if len(s.alts) > 0 {
		tops = make([]abi.TopLogprob, len(s.alts))
		for k, a := range s.alts {
			tops[k] = abi.TopLogprob{Token: str(a.text), Logprob: a.logprob}
		}
	}
	toks := make([]abi.TokenLogprob, len(s.toks))
	for k, t := range s.toks {
		toks[k] = abi.TokenLogprob{Token: str(t.text), Logprob: t.logprob}
		if t.altCount > 0 {
			toks[k].Top = tops[t.alts : t.alts+t.altCount : t.alts+t.altCount]
		}
	}
	return toks
}
