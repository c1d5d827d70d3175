package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
		{"array cut after a comma", "[{\"id\": \"a\"},", []string{"a||||"}, []string{"d.jsonl:1:", "not closed after 1 elements"}},
		{"array cut inside an element", "[{\"id\": \"a\"},\n{\"id\": ", []string{"a||||"}, []string{"d.jsonl:2: element 1", "the file ends inside it"}},
		{"element error names its line", "[\n  {\"id\": \"a\"},\n  {\"id\": \"b\",\n   \"input\": 3}\n]", []string{"a||||"}, []string{"d.jsonl:3: element 1", `field "input"`}},
		{"stray bom byte is not a bom", "\xbf[{\"id\": \"a\"}]", nil, []string{"d.jsonl:1:", "not a JSON object"}},
		{"a name given twice", `{"id": "a", "input": "x", "input": "y"}`, nil, []string{"d.jsonl:1:", "not a JSON object", "duplicate"}},
		{"two aliases of one field", `{"question": "a", "query": "b"}`, nil, []string{"d.jsonl:1:", `both "question" and "query" are set, aliases of "input"`}},
		{"alias before its field", `{"question": "a", "input": "b"}`, nil, []string{"d.jsonl:1:", `both "input" and its alias "question"`}},
		{"a record not an object", `"a"`, nil, []string{"d.jsonl:1:", "not a JSON object", "a string"}},
		{"a record then more", `{"id": "a"} {"id": "b"}`, nil, []string{"d.jsonl:1:", "after the record"}},
		{"a number id keeps its spelling", `{"id": 1.50}`, []string{"1.50||||"}, nil},
		{"a list of one string", `{"contexts": ["a", "b"]}`, []string{"case-1||||a+b"}, nil},
		{"a list holding a number", `{"contexts": ["a", 2]}`, nil, []string{"d.jsonl:1:", `field "contexts"`, "list holding something else"}},
		{"tool output kept raw", `{"tools_called": [{"name": "t", "output": {"k": [1, 2]}}]}`, []string{"case-1||||"}, nil},
		{"tool that is not an object", `{"tools_called": ["t"]}`, nil, []string{"d.jsonl:1:", `field "tools_called"`, "want a list of {name, arguments, output}"}},
		{"array element spanning lines", "[\n{\"id\": \"a\"},\n\n{\"id\":\n \"a\"}]", []string{"a||||"}, []string{"d.jsonl:4: element 1", `duplicate case id "a"`}},
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
	f.Add([]byte(`{"turns": [{"role": "user", "content": "hi", "tools_called": [{"name": "t"}], "retrieval_context": ["r"]}], "scenario": "s", "context": "c"}`))
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

// TestDatasetStrings: a string field in every spelling a dataset may use
// reads as the text it spells, and what is not a string is named.
func TestDatasetStrings(t *testing.T) {
	tests := []struct {
		raw, want, err string
	}{
		{raw: `""`, want: ""},
		{raw: `"What is the capital of France?"`, want: "What is the capital of France?"},
		{raw: `"ça va — «bien» 😀"`, want: "ça va — «bien» 😀"},
		{raw: `"line\nbreak"`, want: "line\nbreak"},
		{raw: `"\u00e9"`, want: "é"},
		{raw: `"\ud83d\ude00"`, want: "😀"},
		{raw: `"quote \" inside"`, want: `quote " inside`},
		{raw: `"back\\slash"`, want: `back\slash`},
		{raw: `"1e5"`, want: "1e5"},
		{raw: `null`, want: ""},
		{raw: `123`, err: "want a string, got a number"},
		{raw: `["a"]`, err: "want a string, got a list"},
		{raw: `{"a": 1}`, err: "want a string, got an object"},
		{raw: `true`, err: "want a string, got a boolean"},
		{raw: "\"a\xffb\"", err: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := readAll(t, `{"id": "x", "input": `+tt.raw+"}\n")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `field "input"`) && tt.err != "UTF-8" {
					t.Fatalf("err = %v, want one naming field \"input\" and %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "x|" + tt.want + "|||"; len(got) != 1 || got[0] != want {
				t.Fatalf("read %q, want %q", got, want)
			}
		})
	}
}

// BenchmarkDatasetNext reads a JSONL dataset of typical records: the cost
// of the dataset per case, against the judge-path budget.
func BenchmarkDatasetNext(b *testing.B) {
	var body bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&body, `{"id": "case-%d", "input": %q, "actual_output": %q, "expected_output": %q, "retrieval_context": [%q, %q], "tags": {"team": "search"}}`+"\n",
			i, strings.Repeat("What is the capital of France? ", 6), strings.Repeat("Paris is the capital and largest city of France. ", 10),
			"Paris", strings.Repeat("France is a country in Europe. ", 5), strings.Repeat("Its capital is \"Paris\". ", 5))
	}
	path := filepath.Join(b.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, body.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		ds, err := OpenDataset(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := ds.Next(context.Background()); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		ds.Close()
	}
}

// TestDatasetConversational: turns and the conversational fields are
// read into the case; every way to get them wrong is an error naming
// file:line, the field and the turn.
func TestDatasetConversational(t *testing.T) {
	ok := `{"id":"chat","turns":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},` +
		`{"role":"assistant","content":"","tools_called":[{"name":"greet","arguments":{"to":"you"}}],"retrieval_context":["r"]},` +
		`{"role":"tool","content":"{\"ok\":true}"},{"role":"assistant","content":"Hello."}],` +
		`"scenario":"greeting","expected_outcome":"greeted","chatbot_role":"a greeter","context":["c"],"channel":"web"}`
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte("\n"+ok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := OpenDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	c, err := ds.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := abi.TestCase{ID: "chat", Context: []string{"c"},
		Turns: []abi.Turn{
			{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
			{Role: "assistant", ToolsCalled: []abi.ToolCall{{Name: "greet", Arguments: json.RawMessage(`{"to":"you"}`)}}, RetrievalContext: []string{"r"}},
			{Role: "tool", Content: `{"ok":true}`}, {Role: "assistant", Content: "Hello."},
		},
		Scenario: "greeting", ExpectedOutcome: "greeted", ChatbotRole: "a greeter",
		Extra: map[string]json.RawMessage{"channel": json.RawMessage(`"web"`)}}
	gotJSON, _ := json.Marshal(c)
	wantJSON, _ := json.Marshal(&want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("read\n%s\nwant\n%s", gotJSON, wantJSON)
	}

	user := `{"role":"user","content":"Hi"}`
	for _, tt := range []struct {
		name, body string
		wantErr    []string
	}{
		{"turns not a list", `{"turns":"hi"}`, []string{"d.jsonl:1:", `field "turns"`, "want a list of turns", "got a string"}},
		{"turns empty", `{"turns":[]}`, []string{`field "turns"`, "at least one turn"}},
		{"turn not an object", `{"turns":[` + user + `,"hello"]}`, []string{`field "turns"`, "turn 1", "want an object", "got a string"}},
		{"turn without role", `{"turns":[{"content":"Hi"}]}`, []string{"turn 0", "no role", "user, assistant, system, tool"}},
		{"turn without content", `{"turns":[{"role":"user"}]}`, []string{"turn 0", "no content"}},
		{"turn with empty content", `{"turns":[{"role":"user","content":""}]}`, []string{"turn 0", "empty content"}},
		{"role not known", `{"turns":[{"role":"bot","content":"Hi"}]}`, []string{"turn 0", `role "bot" is not one of user, assistant, system, tool`}},
		{"role in other capitals", `{"turns":[{"role":"User","content":"Hi"}]}`, []string{`role "User"`}},
		{"role not a string", `{"turns":[{"role":1,"content":"Hi"}]}`, []string{"turn 0", `field "role"`, "want a string"}},
		{"content not a string", `{"turns":[{"role":"user","content":["Hi"]}]}`, []string{`field "content"`, "want a string"}},
		{"unknown turn member", `{"turns":[{"role":"user","content":"Hi","user_id":"u1"}]}`, []string{"turn 0", `unknown field "user_id"`}},
		{"member in other capitals", `{"turns":[{"role":"user","Content":"Hi"}]}`, []string{`unknown field "Content"`}},
		{"member twice", `{"turns":[{"role":"user","content":"Hi","content":"Ho"}]}`, []string{`field "turns"`, `duplicate object member name "content" within "/turns/0"`}},
		{"tool without name", `{"turns":[{"role":"assistant","content":"","tools_called":[{"arguments":{}}]}]}`, []string{"turn 0", "tools_called: item 0 has no name"}},
		{"retrieval not strings", `{"turns":[{"role":"assistant","content":"x","retrieval_context":[1]}]}`, []string{`field "retrieval_context/0"`, "want a list of strings"}},
		{"both input and turns", `{"input":"q","turns":[` + user + `]}`, []string{"d.jsonl:1:", `field "input"`, "conversational", "cannot also have input"}},
		{"both alias and turns", `{"response":"a","turns":[` + user + `]}`, []string{`field "actual_output"`, "cannot also have"}},
		{"tools beside turns", `{"tools_called":[{"name":"t"}],"turns":[` + user + `]}`, []string{`field "tools_called"`}},
		{"scenario without turns", `{"input":"q","scenario":"s"}`, []string{`field "scenario"`, "only a conversational case"}},
		{"chatbot role without turns", `{"chatbot_role":"r"}`, []string{`field "chatbot_role"`}},
		{"scenario not a string", `{"turns":[` + user + `],"scenario":3}`, []string{`field "scenario"`, "want a string"}},
		{"derived field set", `{"turns":[` + user + `],"last_user_turn":"x"}`, []string{`field "last_user_turn"`, "derived from turns"}},
		{"second line named", `{"id":"a"}` + "\n" + `{"turns":[{"role":"user"}]}`, []string{"d.jsonl:2:", "no content"}},
		{"array element named", "[\n" + `{"id":"a"},` + "\n" + `{"turns":[{"role":"x","content":"y"}]}` + "\n]", []string{"d.jsonl:3: element 1", `role "x"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, tt.body)
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
