package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestAppendStringIsMarshal(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain text that is long enough for several words",
		"a <b> & \"c\"\n\t\x01\b\f\r\\ \u2028 \u2029 é \xff",
		"12345678abcdefgh<", "\x00\x1f\x7f", "日本語のテキスト\xe2\x80", "\xe2\x80\xa8x",
	} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal %s", s, got, want)
		}
	}
}

func TestAppendFloatIsMarshal(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-6, 9.99e-7, 1e21, 1e20, 123456789.123,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -1e-9, 5e-324, 0.1 + 0.2} {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, json.Marshal %s", f, got, want)
		}
	}
}

// FuzzAppendString holds AppendString to json.Marshal, byte for byte, on
// arbitrary bytes (invalid UTF-8 included), after a prefix that is not a
// multiple of a word long.
func FuzzAppendString(f *testing.F) {
	f.Add("a <b> & \"c\"\n\t\x01 \u2028 é \xff", 0)
	f.Add("12345678abcdefgh<", 3)
	f.Fuzz(func(t *testing.T, s string, skew int) {
		skew = int(uint(skew) % 8)
		prefix := "abcdefgh"[:skew]
		want, _ := json.Marshal(prefix + s)
		if got := AppendString(nil, prefix+s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal %s", prefix+s, got, want)
		}
	})
}

// FuzzAppendStringNoHTML holds AppendStringNoHTML to a json.Encoder with
// SetEscapeHTML(false).
func FuzzAppendStringNoHTML(f *testing.F) {
	f.Add("a <b> & \"c\"\n\t\x01 \u2028 é \xff")
	f.Add("<<<<>>>>&&&&x")
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendStringNoHTML(nil, s); string(got) != string(want) {
			t.Fatalf("AppendStringNoHTML(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendFloat holds AppendFloat to json.Marshal on every finite
// float64, and Finite to whether json.Marshal succeeds.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -0.5, 1e-7, 1e21, math.Inf(1), math.NaN()} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		want, err := json.Marshal(v)
		if (err == nil) != Finite(v) {
			t.Fatalf("Finite(%v) = %v, json.Marshal error %v", v, Finite(v), err)
		}
		if err != nil {
			return
		}
		if got := AppendFloat(nil, v); string(got) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s, json.Marshal %s", v, got, want)
		}
	})
}
