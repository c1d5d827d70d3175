package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func readAll(t *testing.T, body string) ([]string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := OpenDataset(path)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	var ids []string
	for {
		c, err := ds.Next(context.Background())
		if err == io.EOF {
			return ids, nil
		}
		if err != nil {
			return ids, err
		}
		ids = append(ids, c.ID+"|"+c.Input+"|"+c.ActualOutput+"|"+c.ExpectedOutput+"|"+strings.Join(c.RetrievalContext, "+"))
	}
}

func TestDataset(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []string
		wantErr []string
	}{
		{"jsonl with aliases", `{"id": "a", "question": "q", "generation": "g", "reference": "r"}` + "\n\n# comment\n" + `{"input": "i", "contexts": "one"}`,
			[]string{"a|q|g|r|", "case-4|i|||one"}, nil},
		{"json array", `[{"id": 7, "input": "x"}, {"output": "y"}]`, []string{"7|x|||", "case-1||y||"}, nil},
		{"utf-8 bom", "\xef\xbb\xbf{\"id\": \"bom\"}\n", []string{"bom||||"}, nil},
		{"no trailing newline", `{"id": "a"}`, []string{"a||||"}, nil},
		{"bad json line", "{\"id\": \"a\"}\n{oops}\n", []string{"a||||"}, []string{"d.jsonl:2:", "not a JSON object"}},
		{"wrong field type", `{"id": "a", "input": 3}`, nil, []string{"d.jsonl:1:", `field "input"`, "want a string"}},
		{"alias and field both", `{"input": "a", "question": "b"}`, nil, []string{"d.jsonl:1:", "alias"}},
		{"duplicate id", "{\"id\": \"a\"}\n{\"id\": \"a\"}\n", []string{"a||||"}, []string{"d.jsonl:2:", `duplicate case id "a"`}},
		{"tool without name", `{"tools_called": [{"arguments": {}}]}`, nil, []string{"tools_called", "no name"}},
		{"array element error", `[{"id": "a"}, 5]`, []string{"a||||"}, []string{"element 1"}},
		{"json array after a bom", "\xef\xbb\xbf\n [{\"id\": \"a\"}]\n", []string{"a||||"}, nil},
		{"json array, whitespace after", "[{\"id\": \"a\"}]\n\t \r\n", []string{"a||||"}, nil},
		{"empty json array", "[]", nil, nil},
		{"data after the array", "[{\"id\": \"a\"}]\n\n{\"id\": \"b\"}\n", []string{"a||||"}, []string{"d.jsonl:3:", "after the JSON array"}},
		{"second array", "[{\"id\": \"a\"}][{\"id\": \"b\"}]", []string{"a||||"}, []string{"d.jsonl:1:", "after the JSON array"}},
		{"garbage after the array", "[\n{\"id\": \"a\"}\n]\n x", []string{"a||||"}, []string{"d.jsonl:4:", "after the JSON array"}},
		{"array not closed", "[\n{\"id\": \"a\"},\n{\"id\": \"b\"}\n", []string{"a||||", "b||||"}, []string{"d.jsonl:3:", "not closed after 2 elements"}},
		{"array cut after a comma", "[{\"id\": \"a\"},", []string{"a||||"}, []string{"d.jsonl:1:", "element 1", "not closed"}},
		{"element error names its line", "[\n  {\"id\": \"a\"},\n  {\"id\": \"b\",\n   \"input\": 3}\n]", []string{"a||||"}, []string{"d.jsonl:3: element 1", `field "input"`}},
		{"stray bom byte is not a bom", "\xbf[{\"id\": \"a\"}]", nil, []string{"d.jsonl:1:", "not a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.body)
			if strings.Join(got, ";") != strings.Join(tt.want, ";") {
				t.Errorf("cases = %q, want %q", got, tt.want)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzDataset(f *testing.F) {
	f.Add([]byte(`{"id": "a", "input": "q", "context": ["x"], "tools_called": [{"name": "t"}], "extra": {"k": 1}}`))
	f.Add([]byte(`[{"id": 1}, {"question": "q"}]`))
	f.Add([]byte("\xef\xbb\xbf{\"id\": \"bom\"}\n"))
	f.Add([]byte("\xef\xbb\xbf [{\"id\": \"bom\"}]\n"))
	f.Add([]byte(`[{"id": "a"}] [{"id": "b"}]`))
	f.Add([]byte(`[{"id": "a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := OpenDataset(path)
		if err != nil {
			return
		}
		defer ds.Close()
		seen := map[string]bool{}
		for i := 0; i < 1000; i++ {
			c, err := ds.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), path+":") {
					t.Fatalf("error does not name file:line: %v", err)
				}
				return
			}
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("case id %q empty or repeated", c.ID)
			}
			seen[c.ID] = true
		}
		// A JSON array read to the end is exactly what encoding/json reads
		// from the whole file: nothing cut off, nothing after it.
		body := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
		if len(seen) < 1000 && len(body) > 0 && body[0] == '[' {
			var all []json.RawMessage
			if err := json.Unmarshal(body, &all); err != nil || len(all) != len(seen) {
				t.Fatalf("read %d cases from an array encoding/json reads as %d cases (err %v)", len(seen), len(all), err)
			}
		}
	})
}

// plainStrings are string values in every spelling a dataset may use: the
// plain ones plainString takes, and those it leaves to encoding/json.
var plainStrings = []struct {
	raw   string
	plain bool
}{
	{`""`, true},
	{`"What is the capital of France?"`, true},
	{`"ça va — «bien» 😀"`, true},
	{"\"a\xffb\"", false}, // invalid UTF-8: encoding/json writes U+FFFD
	{`"line\nbreak"`, false},
	{`"\u00e9"`, false},
	{`"\ud83d\ude00"`, false},
	{`"quote \" inside"`, false},
	{`"back\\slash"`, false},
	{`"1e5"`, true},
	{`123`, false},
	{`null`, false},
	{`"`, false},
}

// plainString decodes exactly what encoding/json decodes, and leaves it
// whatever it is not sure of.
func TestPlainStringIsWhatEncodingJSONDecodes(t *testing.T) {
	for _, tc := range plainStrings {
		got, ok := plainString(json.RawMessage(tc.raw))
		if ok != tc.plain {
			t.Errorf("plainString(%s) took it: %v; want %v", tc.raw, ok, tc.plain)
		}
		var want string
		if ok && (json.Unmarshal([]byte(tc.raw), &want) != nil || got != want) {
			t.Errorf("plainString(%s) = %q; encoding/json %q", tc.raw, got, want)
		}
	}
	// Through the dataset: the same case either way.
	for _, tc := range plainStrings {
		if !json.Valid([]byte(tc.raw)) {
			continue
		}
		line := `{"id": ` + tc.raw + `, "input": ` + tc.raw + `, "context": ` + tc.raw + `}`
		var c abi.TestCase
		if err := setField(&c, "input", json.RawMessage(tc.raw)); err != nil {
			continue // not a string: the error path is encoding/json's as before
		}
		var want string
		json.Unmarshal([]byte(tc.raw), &want) //nolint:errcheck // null leaves it empty
		if c.Input != want {
			t.Errorf("input %s read as %q; encoding/json %q (%s)", tc.raw, c.Input, want, line)
		}
	}
}

// FuzzPlainString: the fast path against encoding/json, which it replaces
// for plain strings.
func FuzzPlainString(f *testing.F) {
	for _, tc := range plainStrings {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := plainString(json.RawMessage(raw))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("plainString took %q, which encoding/json refuses: %v", raw, err)
		}
		if got != want {
			t.Fatalf("plainString(%q) = %q; encoding/json %q", raw, got, want)
		}
	})
}

func BenchmarkPlainString(b *testing.B) {
	v := json.RawMessage(`"` + strings.Repeat("What does the response cache share between runs? ", 24) + `"`)
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := plainString(v); !ok {
			b.Fatal("not plain")
		}
	}
}
