package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// decodeStrict decodes one JSON object a guest wrote — a result, a
// descriptor, a judge batch, a log record — into out. Beyond what
// encoding/json checks, it refuses what that decoder would silently
// accept and another reader might take differently:
//
//   - a key that occurs twice in one object, anywhere in the value
//     (details and config_schema included), also when the two spellings
//     differ only in case: encoding/json matches field names without
//     regard to case and keeps the last, so {"score":0.9,"Score":0.1}
//     would score 0.1;
//   - a number that is not a finite float64 (1e400): Go would keep it
//     verbatim in a json.RawMessage and fail later, in whatever reads
//     the result back;
//   - anything but exactly one object.
//
// A number that does not fit the Go type of its field (an abi_minor of
// 2.5 or 1e30) is refused by encoding/json itself. The error names the
// offending key by its path from the root ($.details.x).
func decodeStrict(raw []byte, out any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("no output (the guest returned without writing one, or exited)")
	}
	// The fast path accepts what it is sure of; checkJSON decides the rest
	// and names what it refuses.
	if !quickCheckJSON(raw) {
		if err := checkJSON(raw); err != nil {
			return err
		}
	}
	// Results are most of what guests write; decodeMeasureResult gives
	// what json.Unmarshal would, or leaves raw to it.
	if r, ok := out.(*abi.MeasureResult); ok && decodeMeasureResult(raw, r) {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("$.%s: JSON %s does not fit %s", te.Field, te.Value, te.Type)
		}
		return err
	}
	return nil
}

// checkJSON walks raw token by token; see decodeStrict for what it
// refuses. It keeps one set of (case-folded) keys per open object, so its
// memory is bounded by the input's size, which the caller has bounded.
func checkJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object  bool
		keys    map[string]bool
		key     string // the member being read (objects)
		index   int    // the element being read (arrays)
		wantKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		b.WriteString("$")
		for _, f := range stack {
			if f.object {
				b.WriteString("." + f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	// valueDone advances the enclosing container past one value.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if top := stack[n-1]; top.object {
				top.wantKey = true
			} else {
				top.index++
			}
		}
	}
	for first := true; ; first = false {
		tok, err := dec.Token()
		if err == io.EOF {
			if first {
				return errors.New("no JSON value")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return fmt.Errorf("want a JSON object, got %.40s", bytes.TrimSpace(raw))
			}
		} else if len(stack) == 0 {
			return errors.New("trailing data after the JSON object")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key := tok.(string) // the decoder allows nothing else here
			folded := foldKey(key)
			if top.keys[folded] {
				top.key = key
				return fmt.Errorf("duplicate key %q at %s", key, path())
			}
			top.keys[folded] = true
			top.key, top.wantKey = key, false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			default: // ']'
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case json.Number:
			if f, err := strconv.ParseFloat(string(v), 64); err != nil || math.IsInf(f, 0) {
				return fmt.Errorf("number %.40s at %s does not fit a float64", v, path())
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// foldKey maps every spelling encoding/json would match to one field to
// one string: ASCII upper case, and each other rune to the smallest of its
// Unicode simple-fold orbit (so "K", "k" and the Kelvin sign agree).
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b.WriteRune(r)
	}
	return b.String()
}
