package judgetest

import (
	"strings"
	"testing"
)

// The input file is checked line by line as the real API checks it, the
// error naming the line.
func TestParseBatchFile(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	line := func(id, method, url string) string {
		return `{"custom_id":"` + id + `","method":"` + method + `","url":"` + url + `","body":` + body + `}`
	}
	tests := []struct {
		name, file, wantErr string
		lines               int
		// azure checks the file as an Azure resource serving deployment "m".
		azure bool
	}{
		{"two lines", line("a", "POST", CompletionsPath) + "\n" + line("b", "POST", CompletionsPath) + "\n", "", 2, false},
		{"blank lines skipped", "\n" + line("a", "POST", CompletionsPath) + "\n\n", "", 1, false},
		{"duplicate id", line("a", "POST", CompletionsPath) + "\n" + line("a", "POST", CompletionsPath), `line 2: custom_id "a" is not unique`, 0, false},
		{"missing id", line("", "POST", CompletionsPath), "line 1: custom_id is missing", 0, false},
		{"GET", line("a", "GET", CompletionsPath), `line 1: method "GET"`, 0, false},
		{"other url", line("a", "POST", "/v1/embeddings"), `line 1: url "/v1/embeddings"`, 0, false},
		{"not JSON", "{", "line 1: not a batch request", 0, false},
		{"unknown field", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":` + body + `,"x":1}`, "line 1: not a batch request", 0, false},
		{"two models", line("a", "POST", CompletionsPath) + "\n" + strings.Replace(line("b", "POST", CompletionsPath), `"m"`, `"n"`, 1), `line 2: model "n"`, 0, false},
		{"empty", "\n", "no requests", 0, false},
		{"azure", line("a", "POST", "/chat/completions"), "", 1, true},
		{"azure /v1 url", line("a", "POST", CompletionsPath), `line 1: url "/v1/chat/completions"`, 0, true},
		{"azure other deployment", strings.Replace(line("a", "POST", "/chat/completions"), `"m"`, `"gpt-4o"`, 1), `line 1: model "gpt-4o": the resource has no deployment`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{}
			if tc.azure {
				s.azure = &azureSpec{deployment: "m", apiVersion: "2024-10-21"}
			}
			lines, err := s.parseBatchFile([]byte(tc.file))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v; want %q", err, tc.wantErr)
			case len(lines) != tc.lines:
				t.Fatalf("%d lines; want %d", len(lines), tc.lines)
			}
		})
	}
}

func FuzzParseBatchFile(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := (&Server{}).parseBatchFile(data)
		if err == nil && len(lines) == 0 {
			t.Fatal("no error and no lines")
		}
	})
}
