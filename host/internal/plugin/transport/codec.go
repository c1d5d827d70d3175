package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The ABI's JSON on the host's side (abi/v1/README.md §6), all of it
// through go-json-experiment: what the host sends a plugin, and the strict
// reading of everything a plugin sends back.

// EncodeMessage is what the host sends a plugin: a request, a judge batch's
// result. Text the host holds that is not valid UTF-8 (a dataset read by a
// lenient embedder) goes out with U+FFFD in its place, as encoding/json
// wrote it, instead of failing the call: a guest is never sent bytes the
// host would refuse from it.
func EncodeMessage(v any) ([]byte, error) {
	return json.Marshal(v, jsontext.AllowInvalidUTF8(true))
}

// DecodeStrict decodes one JSON object a guest wrote — a result, a
// descriptor, a judge batch, a log record — into out, which must hold
// its zero value. go-json-experiment's defaults refuse what another
// reader might take differently: a name twice in one object (anywhere in
// the value, details and config_schema included), invalid UTF-8, a number
// that does not fit its field's Go type; names match their fields exactly,
// case included, and members the host does not know are ignored (a newer
// guest's, ABI §5). checkJSON adds the rules of §6 it does not have. The
// error names the offending member by its JSON Pointer (/details/x).
func DecodeStrict(raw []byte, out any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("no output (the guest returned without writing one, or exited)")
	}
	if err := checkJSON(raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return jsonError(err)
	}
	return nil
}

// checkJSON refuses, beyond what the decoder does, anything but exactly one
// object, two names in one object that differ only in case (Unicode
// simple folding: a case-insensitive reader of the result, Go's
// encoding/json among them, takes the last of {"score":0.9,"Score":0.1},
// the host the first), and a number that is not a finite float64 (1e400:
// kept verbatim in details, it would break whoever reads the result back).
func checkJSON(raw []byte) error {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return jsonError(err)
		}
		return fmt.Errorf("want a JSON object, got %.40s", bytes.TrimSpace(raw))
	}
	folds := false // a name is not its own folding
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return jsonError(err)
		}
		depth := dec.StackDepth()
		switch tok.Kind() {
		case '"':
			folds = folds || isName(dec) && foldName(tok.String()) != tok.String()
		case '0':
			if f, _ := strconv.ParseFloat(tok.String(), 64); math.IsInf(f, 0) {
				return fmt.Errorf("number %.40s at %s does not fit a float64", tok.String(), pointer(dec.StackPointer()))
			}
		}
		if depth > 0 {
			continue
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			return errors.New("trailing data after the JSON object")
		}
		if folds {
			return checkFolds(raw)
		}
		return nil
	}
}

// checkFolds refuses two names in one object with one folding: a second
// pass over a valid object, for the few that have a name in capitals or
// beyond ASCII. Its memory is bounded by raw's size, which the caller has
// bounded.
func checkFolds(raw []byte) error {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	// names[i] holds the folded names of the object open at depth i+1
	// (nil for an array).
	var names []map[string]bool
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return jsonError(err)
		}
		switch depth := dec.StackDepth(); tok.Kind() {
		case '{':
			names = append(names, map[string]bool{})
		case '[':
			names = append(names, nil)
		case '}', ']':
			names = names[:depth]
		case '"':
			if !isName(dec) {
				break
			}
			folded := foldName(tok.String())
			if names[depth-1][folded] {
				return fmt.Errorf("duplicate key %q at %s: another differs from it only in case", tok.String(), pointer(dec.StackPointer()))
			}
			names[depth-1][folded] = true
		}
	}
}

// isName: the string just read is an object member's name.
func isName(dec *jsontext.Decoder) bool {
	k, n := dec.StackIndex(dec.StackDepth())
	return k == '{' && n%2 == 1
}

// foldName maps every spelling a case-insensitive reader matches to one
// field to one string: each rune to the smallest of its Unicode
// simple-fold orbit, lower-cased when that is an ASCII capital (so "K",
// "k" and the Kelvin sign agree on "k"). Lower-case ASCII, what names
// nearly always are, is its own folding.
func foldName(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] < utf8.RuneSelf && !('A' <= s[i] && s[i] <= 'Z')
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pointer is p for a message: "/" for the root.
func pointer(p jsontext.Pointer) string {
	if p == "" {
		return "/"
	}
	return string(p)
}

// jsonError says what the library's error says, in the words of the
// ABI's rules (abi/v1/README.md §6), naming the member by its JSON
// Pointer; the caller says what was being decoded and whose it was.
func jsonError(err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		if se.Err == jsontext.ErrDuplicateName {
			return fmt.Errorf("duplicate key %q at %s", se.JSONPointer.LastToken(), pointer(se.JSONPointer))
		}
		return fmt.Errorf("not JSON: %s", strings.TrimPrefix(se.Error(), "jsontext: "))
	}
	var me *json.SemanticError
	if errors.As(err, &me) {
		return errors.New(strings.TrimPrefix(me.Error(), "json: "))
	}
	return err
}
