package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			if err != nil {
				return
			}
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("case id %q empty or repeated", c.ID)
			}
			seen[c.ID] = true
		}
	})
}
