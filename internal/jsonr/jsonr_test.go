package jsonr

import (
	"encoding/json"
	"strings"
	"testing"
)

// stringEndByBytes is StringEnd one byte at a time.
func stringEndByBytes(b []byte, start int) (end int, plain bool) {
	plain = true
	for i := start; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i, plain
		case c < 0x20:
			return -1, false
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return -1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(b[i:]) < 0 {
					return -1, false
				}
				i += 6
			default:
				return -1, false
			}
		case c >= 0x80:
			plain = false
			i++
		default:
			i++
		}
	}
	return -1, false
}

// TestStringEndWords: the 32- and 8-byte steps of StringEnd find what a
// byte-by-byte scan finds, for every special byte at every position of
// strings across the step boundaries.
func TestStringEndWords(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 80; n++ {
		for p := 0; p <= n; p++ {
			// 0x00 and 0x1f borrow into the bytes above them, which the
			// word test then marks too; 0x20 and 0x7f are plain.
			for _, special := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, 'a'} {
				b := []byte(strings.Repeat("a", p) + string([]byte{special}) + strings.Repeat("b", n-p) + `"` + "tail")
				for _, start := range []int{0, 1, 3} {
					if start > len(b) {
						continue
					}
					ge, gc := StringEnd(b, start)
					we, wc := stringEndByBytes(b, start)
					if ge != we || gc != wc {
						t.Fatalf("StringEnd(%q, %d) = %d, %v; want %d, %v", b, start, ge, gc, we, wc)
					}
				}
			}
		}
	}
}

// FuzzStr: a string Str takes is the string json.Unmarshal decodes, and
// Str takes every JSON string (the callers' fuzz tests cover the rest of
// the reader through their decoders).
func FuzzStr(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`,
		"\"\xff\xfe\"", "\"é\"", `"\x"`, `"\u12"`, "\"\x01\"", `"abc`, `"` + strings.Repeat("long text ", 20) + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := Reader{B: raw}
		var got string
		ok := r.Str(&got)
		r.Space()
		ok = ok && r.I == len(raw)
		var want string
		werr := json.Unmarshal(raw, &want)
		isString := len(raw) > 0 && raw[0] == '"' && werr == nil
		if ok != isString {
			t.Fatalf("Str(%q) = %v; json.Unmarshal into a string: %v", raw, ok, werr)
		}
		if ok && got != want {
			t.Fatalf("Str(%q) = %q; json.Unmarshal %q", raw, got, want)
		}
	})
}

// BenchmarkStringEndShort is a request's short strings (an id, a metric
// name, "Paris"), where the word holding the closing quote decides.
func BenchmarkStringEndShort(b *testing.B) {
	buf := []byte(`case-000123","metric":"exact","actual_output":"Paris","expected_output":"Paris"}`)
	for b.Loop() {
		if end, _ := StringEnd(buf, 0); end != 11 {
			b.Fatal(end)
		}
	}
}
