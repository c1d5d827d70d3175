package engine

import (
	"encoding/json"
	"reflect"
	"testing"
)

// datasetRecords are dataset lines as people write them; the first ones
// must split without encoding/json.
var datasetRecords = []string{
	`{"id": "a", "input": "q", "context": ["x", "y"], "tools_called": [{"name": "t", "arguments": {"k": [1, 2.5e3, -0]}}], "extra": {"k": null, "b": true}}`,
	"{ \"input\" :\t\"é ü\" ,\r\n \"expected_output\": \"x\\\"y\\u00e9\" , \"n\": 12 }",
	`{}`,
	`{"question": "q", "output": "o", "reference": "r", "contexts": "one"}`,
	// encoding/json decides these:
	`{"a": 1, "a": 2}`,
	`{"\u0061": 1}`,
	`{"a": 01}`,
	`{"a": 1,}`,
	`{"a": [1 2]}`,
	`{"a": "x` + "\x01" + `"}`,
	`[1]`,
	`{"a": 1} x`,
	"{\"\xff\": 1}",
	`{"a": tru}`,
	`{"a": 1 .5}`,
}

func TestSplitObjectFastTakesPlainRecords(t *testing.T) {
	for i, l := range datasetRecords {
		_, ok := splitObjectFast([]byte(l), nil)
		if want := i < 4; ok != want {
			t.Errorf("%s: fast %v; want %v", l, ok, want)
		}
		checkSplit(t, []byte(l))
	}
}

// checkSplit holds splitObjectFast to json.Unmarshal into a map of raw
// values.
func checkSplit(t *testing.T, raw []byte) {
	t.Helper()
	members, ok := splitObjectFast(raw, nil)
	if !ok {
		return
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("split %s, which encoding/json refuses: %v", raw, err)
	}
	got := map[string]json.RawMessage{}
	for _, m := range members {
		got[m.key] = m.val
	}
	if len(members) != len(want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("split %s:\n got %q\nwant %q", raw, got, want)
	}
}

// FuzzSplitObjectFast: whatever the fast split accepts, encoding/json
// accepts and splits the same way.
func FuzzSplitObjectFast(f *testing.F) {
	for _, l := range datasetRecords {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkSplit(t, []byte(line))
	})
}

// FuzzHasControl: the eight-bytes-at-a-time check is the byte loop.
func FuzzHasControl(f *testing.F) {
	f.Add([]byte("plain text, no control"))
	f.Add([]byte("0123456789abcdef\x1f"))
	f.Add([]byte("\x00\xff\x80\x20\x7f\x9f\xa0 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := false
		for _, c := range b {
			want = want || c < 0x20
		}
		if got := hasControl(b); got != want {
			t.Fatalf("hasControl(%q) = %v", b, got)
		}
	})
}
