// Package strictjson checks that bytes are one JSON object that every
// JSON reader takes the same way: no key twice in one object (in any
// spelling encoding/json would match to the same field), no number beyond
// a float64. It serves the host's readers of guest output
// (host/internal/plugin) and of its own files (host/internal/lockfile).
package strictjson

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
)

// Check walks raw token by token and refuses what encoding/json would
// silently accept and another reader might take differently:
//
//   - a key that occurs twice in one object, anywhere in the value, also
//     when the two spellings differ only in case: encoding/json matches
//     field names without regard to case and keeps the last, so
//     {"score":0.9,"Score":0.1} would score 0.1 (a *DuplicateKeyError);
//   - a number that is not a finite float64 (1e400);
//   - anything but exactly one object.
//
// It keeps one set of (case-folded) keys per open object, so its memory
// is bounded by the input's size, which the caller has bounded.
func Check(raw []byte) error {
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
				return &DuplicateKeyError{Key: key, Path: path(), Offset: dec.InputOffset()}
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

// DuplicateKeyError is a key met a second time in one object.
type DuplicateKeyError struct {
	Key  string // as spelled the second time
	Path string // from the root: $.plugins.x.digest
	// Offset is the byte offset just past the second key, for callers
	// that name a line.
	Offset int64
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q at %s", e.Key, e.Path)
}
