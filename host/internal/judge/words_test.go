package judge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

func TestServerWords(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"openai", `{"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}`, "Incorrect API key provided."},
		{"bare error string", `{"error": "model not loaded"}`, "model not loaded"},
		{"error without message", `{"error": {"code": 500}}`, `{"code":500}`},
		{"top-level message", `{"object": "error", "message": "context too long", "code": 400}`, "context too long"},
		{"fastapi detail list", `{"detail": [{"loc": ["body", "n"], "msg": "must be 1"}, {"loc": ["body", "model"], "msg": "required"}]}`, "body.n: must be 1; body.model: required"},
		{"fastapi detail string", `{"detail": "Not Found"}`, "Not Found"},
		{"other json", `{"hello": "world"}`, `{"hello": "world"}`},
		{"json string", `"just text"`, "just text"},
		{"html", "<!DOCTYPE html><html><body><h1>503</h1>\n<p>Service   Unavailable</p></body></html>", "503 Service Unavailable"},
		{"plain", "  upstream timed out\r\n\tafter 30s  ", "upstream timed out after 30s"},
		{"control characters", "a\x1b[2Jb\x00c\u200bd", "a [2Jb c d"},
		{"invalid utf-8", "ok\xff\xfe fine", "ok fine"},
		{"empty", "   ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverWords([]byte(tc.body)); got != tc.want {
				t.Errorf("serverWords(%q) = %q; want %q", tc.body, got, tc.want)
			}
		})
	}
}

func TestBounded(t *testing.T) {
	s := strings.Repeat("é", 300) // 600 bytes
	got := bounded(s, 511)
	if !utf8.ValidString(got) || len(got) > 511+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("bounded = %q (%d bytes)", got, len(got))
	}
	if bounded("short", 10) != "short" {
		t.Error("bounded changed a short string")
	}
}

// The server controls every byte of an error body: whatever it sends, the
// words are one line of printable UTF-8 and bounded.
func FuzzServerWords(f *testing.F) {
	for _, seed := range []string{
		`{"error": {"message": "x"}}`, `{"detail": [{"loc": [1, "a"], "msg": "m"}]}`, `<html><body>x</body></html>`,
		`{"error": {"error": {"error": {"error": {"error": "deep"}}}}}`, "\x00\x1b\xff", `[1, true, null, "s"]`, `{"message": 5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := serverWords(body)
		if !utf8.ValidString(w) {
			t.Fatalf("invalid UTF-8: %q", w)
		}
		for _, r := range w {
			if unicode.IsControl(r) || r == '\n' {
				t.Fatalf("control character %U in %q", r, w)
			}
		}
		if len(w) > 4*maxWordsInput {
			t.Fatalf("%d bytes of words", len(w))
		}
		if b := bounded(w, maxServerWords); len(b) > maxServerWords+len("…") || !utf8.ValidString(b) {
			t.Fatalf("bounded to %d bytes", len(b))
		}
	})
}

// A 2xx body is either a completion with at least one choice or a failure
// that says what the body was; never a panic, never an empty completion.
// (Whether a body is a completion, and what of it is kept, is
// openaiwire's FuzzDecode.)
func FuzzDecodeCompletion(f *testing.F) {
	for _, seed := range []string{
		`{"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}`,
		`{"choices": [{"index": 1, "message": {"content": "b"}, "logprobs": {"content": [{"token": "b", "logprob": -0.1, "top_logprobs": [{"token": "b", "logprob": -0.1}]}]}}, {"index": 0, "message": {"content": "a"}}]}`,
		`{"error": {"message": "boom"}}`, `{"choices": []}`, `{"usage": null, "choices": [{}]}`, `{"choices": [{"index": -5}], "usage": {"prompt_tokens": -1}}`, `null`, ``,
	} {
		f.Add("application/json", []byte(seed))
	}
	f.Add("text/html", []byte("<html>login</html>"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		for _, need := range []openaiwire.Need{openaiwire.NeedScore, openaiwire.NeedAll} {
			c, fail := decodeCompletion(contentType, body, need)
			if fail == nil {
				if len(c.choices) == 0 {
					t.Fatal("a completion without choices was accepted")
				}
				if c.inputTokens < 0 || c.outputTokens < 0 {
					t.Fatalf("negative usage %d, %d", c.inputTokens, c.outputTokens)
				}
				continue
			}
			if fail.kind != failUnparseable && fail.kind != failErrorBody {
				t.Fatalf("kind %d for a 2xx body", fail.kind)
			}
			if fail.detail == "" {
				t.Fatal("a failure without detail")
			}
		}
	})
}
