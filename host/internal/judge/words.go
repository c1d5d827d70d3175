package judge

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A server's own words about a failure are worth more than any status
// line: "'response_format' of type 'json_schema' is not supported with
// this model" says what to change. They are also text an untrusted server
// controls, so they are bounded, stripped of control characters (no
// terminal escapes, no forged log lines) and, by the judge, of the API key.
const (
	// maxWordsInput is how much of a body is looked at for words.
	maxWordsInput = 64 << 10
	// maxServerWords bounds the words an error message keeps.
	maxServerWords = 512
	// maxWordsDepth bounds how deep nested error objects are followed.
	maxWordsDepth = 4
)

// serverWords extracts what a server said in body: the message of an
// OpenAI-style {"error": {"message": …}}, a bare {"error": "…"}, a FastAPI
// {"detail": [{"loc": …, "msg": …}]}, a top-level "message" (after a bare
// "error" naming the status, as in {"error": "Internal Server Error",
// "message": …}), the text of
// an HTML page, or the body as text. The result is one line of printable
// text; the judge bounds it after redacting the key.
func serverWords(body []byte) string {
	if len(body) > maxWordsInput {
		body = body[:maxWordsInput]
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var text string
	var v any
	switch {
	case json.Unmarshal(body, &v, lenientJSON) == nil:
		text = jsonWords(v, 0)
		if text == "" {
			text = string(body)
		}
	case looksHTML(body):
		text = htmlText(body)
	default:
		text = string(body)
	}
	return oneLine(text)
}

// lenientJSON reads an error body for its words: a server's error page
// need not be strict JSON to say what went wrong.
var lenientJSON = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// firstOf is the value of the first of keys that m has.
func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// jsonWords finds the message in a decoded JSON error body.
func jsonWords(v any, depth int) string {
	if depth > maxWordsDepth {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, key := range []string{"error", "message", "detail", "msg", "error_message"} {
			if s := jsonWords(x[key], depth+1); s != "" {
				if loc, ok := x["loc"].([]any); ok && key == "msg" {
					return locString(loc) + ": " + s
				}
				if kind, ok := x["error"].(string); ok && key == "error" {
					// {"error": "Internal Server Error", "message": "…"}
					// (Spring, Express, many gateways): the bare error is
					// only the status's name; the message says what broke.
					if m := jsonWords(firstOf(x, "message", "detail"), depth+1); m != "" && m != kind {
						return kind + ": " + m
					}
				}
				return s
			}
		}
		if depth == 0 {
			return ""
		}
		b, _ := json.Marshal(x, json.Deterministic(true))
		return string(b)
	case []any:
		var parts []string
		for _, item := range x {
			if s := jsonWords(item, depth+1); s != "" {
				parts = append(parts, s)
			}
			if len(parts) == 8 {
				break
			}
		}
		return strings.Join(parts, "; ")
	case nil:
		return ""
	case float64, bool:
		if depth == 0 {
			return ""
		}
		return fmt.Sprint(x)
	}
	return ""
}

// locString writes a FastAPI error location ["body", "response_format",
// "type"] as body.response_format.type.
func locString(loc []any) string {
	parts := make([]string, 0, len(loc))
	for _, p := range loc {
		parts = append(parts, fmt.Sprint(p))
	}
	return strings.Join(parts, ".")
}

func looksHTML(body []byte) bool {
	head := bytes.ToLower(body[:min(len(body), 256)])
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) ||
		bytes.Contains(head, []byte("<head")) || bytes.Contains(head, []byte("<body"))
}

// htmlText drops tags, keeping the text a proxy's error page shows
// ("502 Bad Gateway nginx").
func htmlText(body []byte) string {
	var b strings.Builder
	inTag := false
	for _, c := range string(body) {
		switch {
		case c == '<':
			inTag = true
			b.WriteByte(' ')
		case c == '>' && inTag:
			inTag = false
		case !inTag:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// oneLine makes s one line of printable, valid UTF-8 text: control and
// invisible format characters become spaces, runs of space collapse.
func oneLine(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), maxWordsInput))
	space := true // drop leading space
	for i, w := 0, 0; i < len(s); i += w {
		r, width := utf8.DecodeRuneInString(s[i:])
		w = width
		if r == utf8.RuneError && width <= 1 {
			continue
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			continue
		}
		b.WriteRune(r)
		space = false
	}
	return strings.TrimRight(b.String(), " ")
}

// withWords appends what the body says to what went wrong.
func withWords(what string, body []byte) string {
	if w := serverWords(body); w != "" {
		return what + ": " + w
	}
	return what
}

// bounded cuts s to at most n bytes on a rune boundary, marking the cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// words is what the judge keeps of a failure's detail: the API key
// removed (some servers echo a wrong key), then bounded.
func (j *Judge) words(s string) string {
	return bounded(j.redact(s), maxServerWords)
}
