package judgetest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// anthropicCall sends one request to an Anthropic server (its messages
// or its batch API) with the headers the API needs (unless header is
// false) and returns the status and body.
func anthropicCall(t *testing.T, s *Server, method, path, body string, header bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if header {
		req.Header.Set("X-Api-Key", "k")
		req.Header.Set("Anthropic-Version", AnthropicVersion)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A message batch's create is checked as the real API checks it: headers,
// the requests' shape, custom_id's rule and uniqueness.
func TestMessageBatchCreateChecks(t *testing.T) {
	s := New(t, Anthropic(), WithAPIKey("k"))
	params := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	req := func(id string) string { return `{"custom_id":"` + id + `","params":` + params + `}` }
	for _, tc := range []struct {
		name, body string
		header     bool
		status     int
		want       string
	}{
		{"no headers", `{"requests":[` + req("a") + `]}`, false, 401, "x-api-key"},
		{"no requests", `{"requests":[]}`, true, 400, "a batch holds 1 to 100000"},
		{"bad custom_id", `{"requests":[` + req("a b") + `]}`, true, 400, "requests.0.custom_id"},
		{"long custom_id", `{"requests":[` + req(strings.Repeat("a", 65)) + `]}`, true, 400, "requests.0.custom_id"},
		{"duplicate custom_id", `{"requests":[` + req("a") + `,` + req("a") + `]}`, true, 400, "is not unique in the batch"},
		{"params not an object", `{"requests":[{"custom_id":"a","params":[]}]}`, true, 400, "requests.0.params"},
		{"unknown field", `{"requests":[` + req("a") + `],"x":1}`, true, 400, "invalid JSON body"},
		{"ok", `{"requests":[` + req("a-0") + `,` + req("B_1") + `]}`, true, 200, `"processing_status":"in_progress"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := anthropicCall(t, s, "POST", "/v1/messages/batches", tc.body, tc.header)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s; want %d and %q", status, body, tc.status, tc.want)
			}
		})
	}
	if n := s.BatchCreates(); n != 1 {
		t.Errorf("%d batches created; want 1", n)
	}
}

// A message batch's life: results refused until it ends; a cancel ends it
// at the next read with its requests canceled; a completed batch's
// requests are answered by the server's rules, a bad params errored.
func TestMessageBatchLife(t *testing.T) {
	s := New(t, Anthropic(), WithAPIKey("k"))
	s.SetBatchMode(BatchManual)
	params := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	create := func(body string) string {
		status, out := anthropicCall(t, s, "POST", "/v1/messages/batches", body, true)
		var b struct{ ID string }
		if status != 200 || json.Unmarshal([]byte(out), &b) != nil {
			t.Fatalf("create: %d %s", status, out)
		}
		return b.ID
	}
	id := create(`{"requests":[{"custom_id":"a","params":` + params + `}]}`)
	if status, out := anthropicCall(t, s, "GET", "/v1/messages/batches/"+id+"/results", "", true); status != 400 || !strings.Contains(out, "once it has ended") {
		t.Errorf("results before the end: %d %s", status, out)
	}
	if status, out := anthropicCall(t, s, "POST", "/v1/messages/batches/"+id+"/cancel", "", true); status != 200 || !strings.Contains(out, `"processing_status":"canceling"`) {
		t.Errorf("cancel: %d %s", status, out)
	}
	if status, out := anthropicCall(t, s, "GET", "/v1/messages/batches/"+id, "", true); status != 200 || !strings.Contains(out, `"processing_status":"ended"`) || !strings.Contains(out, `"canceled":1`) {
		t.Errorf("read after cancel: %d %s", status, out)
	}
	if status, out := anthropicCall(t, s, "GET", "/v1/messages/batches/"+id+"/results", "", true); status != 200 || strings.TrimSpace(out) != `{"custom_id":"a","result":{"type":"canceled"}}` {
		t.Errorf("results: %d %s", status, out)
	}

	id = create(`{"requests":[{"custom_id":"ok","params":` + params + `},{"custom_id":"bad","params":{"model":"m","messages":[]}}]}`)
	if err := s.CompleteBatch(id); err != nil {
		t.Fatal(err)
	}
	_, out := anthropicCall(t, s, "GET", "/v1/messages/batches/"+id+"/results", "", true)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"succeeded"`) || !strings.Contains(lines[0], `"type":"message"`) ||
		!strings.Contains(lines[1], `"type":"errored"`) || !strings.Contains(lines[1], "max_tokens: Field required") {
		t.Errorf("results:\n%s", out)
	}
	if b := s.Batches(); len(b) != 2 || b[1].Status != "ended" || len(b[1].CustomIDs) != 2 {
		t.Errorf("batches %+v", b)
	}
}
