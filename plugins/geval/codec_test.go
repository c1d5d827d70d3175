package geval

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestDecodeReply(t *testing.T) {
	seven := 7
	for _, tc := range []struct {
		in   string
		want reply
		err  bool
	}{
		{in: `{"reason":"Correct and concise.","score":7}`, want: reply{Reason: "Correct and concise.", Score: &seven}},
		{in: ` { "score" : 7 , "reason" : "a \"quoted\" \u00e9" } `, want: reply{Reason: `a "quoted" é`, Score: &seven}},
		{in: `{"Score":7,"REASON":"capitals"}`, want: reply{Reason: "capitals", Score: &seven}},
		{in: `{"score":7,"extra":true}`, want: reply{Score: &seven}},
		{in: `{"score":null}`, want: reply{}},
		{in: `{"score":1,"score":7}`, err: true},
		{in: `{"score":1,"Score":7}`, err: true},
		{in: `{"score":7.5}`, err: true},
		{in: `{"score":"7"}`, err: true},
		{in: "{\"reason\":\"\xff\",\"score\":7}", err: true},
		{in: `{"score":7}x`, err: true},
		{in: `[1]`, err: true},
		{in: ``, err: true},
	} {
		got, err := decodeReply([]byte(tc.in))
		if (err != nil) != tc.err || err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// FuzzDecodeReply: what decodeReply accepts, encoding/json (the reader
// it replaced) decodes to the same reply. Inputs with '-' or '_' are left
// out: go-json-experiment's case-insensitive matching ignores them too
// ("sco_re" is score), encoding/json's did not.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{`{"reason":"x","score":9}`, `{"score":10}`, `{}`, `{"score":1.0}`, `{"Score":3}`, `{"score":1,"score":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeReply(b)
		if err != nil || bytes.ContainsAny(b, "-_") {
			return
		}
		var want reply
		if werr := json.Unmarshal(b, &want); werr != nil {
			t.Fatalf("%q: decodes to %+v, encoding/json refuses it: %v", b, got, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, encoding/json %+v", b, got, want)
		}
	})
}
