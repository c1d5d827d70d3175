package abi

import (
	"encoding/json"
	"testing"
)

// TestKindCapabilities: an absent list inherits the plugin's (minor 0
// behaviour), an empty list asks for nothing, and the two survive JSON.
func TestKindCapabilities(t *testing.T) {
	t.Parallel()
	var d Descriptor
	if err := json.Unmarshal([]byte(`{"name":"p","version":"1","abi_major":1,"abi_minor":1,"capabilities":["judge"],
		"kinds":[{"name":"a","role":"metric"},{"name":"b","role":"metric","capabilities":[]},
		{"name":"c","role":"metric","capabilities":["judge"]},{"name":"d","role":"metric","capabilities":null}]}`), &d); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, true} {
		if got := d.KindAsks(d.Kinds[i], CapJudge); got != want {
			t.Errorf("kind %s asks judge = %v, want %v", d.Kinds[i].Name, got, want)
		}
	}
	b, err := json.Marshal(d.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"name":"a","role":"metric"},{"name":"b","role":"metric","capabilities":[]},{"name":"c","role":"metric","capabilities":["judge"]},{"name":"d","role":"metric"}]`
	if string(b) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b, want)
	}
}
