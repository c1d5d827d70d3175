package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatasetToolArguments: a tool call's arguments are read from
// "arguments" or DeepEval's "input_parameters" / "inputParameters" (not
// dropped as unknown keys, which would make every argument comparison
// equal), and given twice they are an error naming the item.
func TestDatasetToolArguments(t *testing.T) {
	for _, tc := range []struct {
		name, tools, want, err string
	}{
		{"arguments", `[{"name": "s", "arguments": {"q": 1}}]`, `{"q": 1}`, ""},
		{"input_parameters", `[{"name": "s", "input_parameters": {"q": 1}, "description": "d"}]`, `{"q": 1}`, ""},
		{"inputParameters", `[{"name": "s", "inputParameters": {"q": 1}}]`, `{"q": 1}`, ""},
		{"none", `[{"name": "s"}]`, ``, ""},
		{"twice", `[{"name": "s", "arguments": {}, "input_parameters": {"q": 1}}]`, "", "item 0 gives its arguments twice"},
	} {
		path := filepath.Join(t.TempDir(), "d.jsonl")
		if err := os.WriteFile(path, []byte(`{"id": "a", "expected_tools": `+tc.tools+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := OpenDataset(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ds.Next(context.Background())
		ds.Close()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "d.jsonl:1:") {
				t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := string(c.ExpectedTools[0].Arguments); got != tc.want || c.ExpectedTools[0].Name != "s" {
			t.Errorf("%s: arguments %q, want %q", tc.name, got, tc.want)
		}
	}
}
