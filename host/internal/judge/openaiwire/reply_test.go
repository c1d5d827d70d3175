package openaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/score"
)

// checkDecode holds Decode to DecodeGeneric on body: with NeedAll the same
// completion or both an error; with NeedScore, on every body the generic
// decode takes, the same completion but for the alternatives scoring
// never reads (leanOf), which package score must not miss.
func checkDecode(t *testing.T, body []byte) {
	t.Helper()
	want, wantErr := DecodeGeneric(body)
	all, allErr := Decode(body, NeedAll)
	if (allErr == nil) != (wantErr == nil) || !reflect.DeepEqual(all, want) {
		t.Fatalf("Decode(NeedAll) = %+v, %v\nDecodeGeneric = %+v, %v\n%s", all, allErr, want, wantErr, body)
	}
	if errors.Is(wantErr, ErrNoChoices) != errors.Is(allErr, ErrNoChoices) || errors.Is(wantErr, ErrErrorReply) != errors.Is(allErr, ErrErrorReply) {
		t.Fatalf("Decode(NeedAll) error %v; DecodeGeneric's %v\n%s", allErr, wantErr, body)
	}
	lean, leanErr := Decode(body, NeedScore)
	if wantErr != nil {
		// A list the lean path passes over is checked as JSON, not as
		// alternatives: a mistyped member there is the one thing only the
		// generic decode refuses.
		if leanErr == nil && !inSkippedList(wantErr, want, body) {
			t.Fatalf("Decode(NeedScore) took a body DecodeGeneric refuses (%v), outside a skipped list\n%s", wantErr, body)
		}
		return
	}
	if leanErr != nil {
		t.Fatalf("Decode(NeedScore): %v; DecodeGeneric took it\n%s", leanErr, body)
	}
	if w := leanOf(want); !reflect.DeepEqual(lean, w) {
		t.Fatalf("Decode(NeedScore) =\n %+v\nwant\n %+v\n%s", lean, w, body)
	}
	sameScores(t, body, want, lean)
}

// inSkippedList reports whether the generic decode's error is about a
// value inside a top_logprobs list the lean path passes over: of a token
// that holds no digit and follows none.
func inSkippedList(err error, _ Completion, body []byte) bool {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) {
		return false
	}
	var choice, token int
	var rest string
	if n, _ := fmt.Sscanf(strings.ReplaceAll(string(se.JSONPointer), "/", " "), " choices %d logprobs content %d %s", &choice, &token, &rest); n < 3 || rest != "top_logprobs" {
		return false
	}
	// The token texts as the full decode of the same body, with that list
	// left out, reads them.
	texts := tokenTexts(body, choice)
	if texts == nil || token >= len(texts) {
		return false
	}
	return !hasDigit([]byte(texts[token])) && (token == 0 || !hasDigit([]byte(texts[token-1])))
}

// tokenTexts is choice's token texts in body, read by encoding/json without
// the alternatives.
func tokenTexts(body []byte, choice int) []string {
	var w struct {
		Choices []struct {
			Logprobs *struct {
				Content []struct {
					Token string `json:"token"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &w) != nil || choice >= len(w.Choices) || w.Choices[choice].Logprobs == nil {
		return nil
	}
	var out []string
	for _, t := range w.Choices[choice].Logprobs.Content {
		out = append(out, t.Token)
	}
	return out
}

// leanOf is c as NeedScore keeps it: a token's alternatives only when it
// or the token before it holds a digit.
func leanOf(c Completion) Completion {
	out := c
	out.Choices = make([]Choice, len(c.Choices))
	for i, ch := range c.Choices {
		out.Choices[i] = ch
		if ch.Tokens == nil {
			continue
		}
		toks := make([]abi.TokenLogprob, len(ch.Tokens))
		for k, tk := range ch.Tokens {
			toks[k] = tk
			if !hasDigit([]byte(tk.Token)) && (k == 0 || !hasDigit([]byte(ch.Tokens[k-1].Token))) {
				toks[k].Top = nil
			}
		}
		out.Choices[i].Tokens = toks
	}
	return out
}

// scoreSpecs are the ranges replies are scored on in the comparisons.
var scoreSpecs = []abi.ScoreSpec{{Min: 0, Max: 10}, {Min: 1, Max: 10}, {Min: 1, Max: 5}, {Min: -5, Max: 5}, {Min: 0, Max: 100}, {Min: 0, Max: 1}}

// sameScores checks that package score reads the lean tokens as it reads
// the full ones: every choice, every range, both number-token rules.
func sameScores(t *testing.T, body []byte, full, lean Completion) {
	t.Helper()
	for c := range full.Choices {
		f, l := full.Choices[c], lean.Choices[c]
		for _, spec := range scoreSpecs {
			spec.Field = "score"
			for _, rule := range []score.NumberTokens{score.NumbersDigits, score.NumbersWhole} {
				fr, ferr := score.FromJudgeTokens(rule, f.Content, f.Tokens, spec, nil)
				lr, lerr := score.FromJudgeTokens(rule, l.Content, l.Tokens, spec, nil)
				if fmt.Sprint(ferr) != fmt.Sprint(lerr) || !reflect.DeepEqual(fr, lr) {
					t.Fatalf("choice %d, range [%d,%d], %s: score %+v (%v), lean %+v (%v)\n%s",
						c, spec.Min, spec.Max, rule, fr, ferr, lr, lerr, body)
				}
			}
		}
	}
}

// The hand-written token path and json.Unmarshal agree on generated
// replies, and the lean replies score as the full ones.
func TestDecodeMatchesGeneric(t *testing.T) {
	g := &replyGen{r: rand.New(rand.NewPCG(13, 2026))}
	weighted := 0
	const n = 3000
	for range n {
		body, _ := g.reply()
		if _, err := DecodeGeneric(body); err != nil {
			t.Fatalf("the generator wrote a body the generic decode refuses: %v\n%s", err, body)
		}
		checkDecode(t, body)
		c, _ := Decode(body, NeedScore)
		if sr, err := score.FromTokens(c.Choices[0].Content, c.Choices[0].Tokens, abi.ScoreSpec{Min: 0, Max: 10}, nil); err == nil && sr.Mode == abi.ScoreWeighted {
			weighted++
		}
	}
	if weighted < n/10 {
		t.Errorf("only %d of %d replies weighted: the comparison hardly exercises weighting", weighted, n)
	}
}

// Strict decoding, and bodies that are not the ordinary shape.
func TestDecodeOddBodies(t *testing.T) {
	ok := `{"choices": [{"index": 0, "message": {"content": "7"}, "finish_reason": "stop"}]}`
	tests := []struct {
		name string
		body string
		want error // nil: decoded; errAny: some error
	}{
		{"ordinary", ok, nil},
		{"trailing garbage", ok + `x`, errAny},
		{"two values", ok + ` {}`, errAny},
		{"duplicate choices", `{"choices": [], "choices": [{"message": {"content": "a"}}]}`, errAny},
		{"duplicate content", `{"choices": [{"message": {"content": "a", "content": "b"}}]}`, errAny},
		{"duplicate token", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a", "token": "b"}]}}]}`, errAny},
		{"duplicate in a skipped list", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a", "top_logprobs": [{"token": "b", "token": "c"}]}]}}]}`, errAny},
		{"capitalised name", `{"Choices": [{"message": {"content": "a"}}]}`, ErrNoChoices},
		{"capitalised token name", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"Token": "a", "logprob": -1}]}}]}`, nil},
		{"escaped name", `{"\u0063hoices": [{"message": {"content": "a"}, "logprobs": {"content": [{"\u0074oken": "a"}]}}]}`, nil},
		{"index as float", `{"choices": [{"index": 1.0, "message": {"content": "a"}}]}`, errAny},
		{"index too large", `{"choices": [{"index": 99999999999999999999, "message": {"content": "a"}}]}`, errAny},
		{"logprob out of range", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a", "logprob": -1e999}]}}]}`, errAny},
		{"kept logprob out of range", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "7", "logprob": 0, "top_logprobs": [{"token": "b", "logprob": -1e999}]}]}}]}`, errAny},
		{"logprob a string", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a", "logprob": "-1"}]}}]}`, errAny},
		{"token a number", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": 7}]}}]}`, errAny},
		{"tokens an object", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": {}}}]}`, errAny},
		{"alternatives an object", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "7", "top_logprobs": {}}]}}]}`, errAny},
		{"skipped alternatives an object", `{"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{"token": "a", "top_logprobs": {}}]}}]}`, errAny},
		{"content a number", `{"choices": [{"message": {"content": 7}}]}`, errAny},
		{"choice null", `{"choices": [null]}`, nil},
		{"token and alternative null", `{"choices": [{"message": {"content": "7"}, "logprobs": {"content": [null, {"token": "7", "top_logprobs": [null]}]}}]}`, nil},
		{"no choices", `{"choices": []}`, ErrNoChoices},
		{"null choices", `{"choices": null}`, ErrNoChoices},
		{"error with 200", `{"error": {"message": "overloaded"}}`, ErrErrorReply},
		{"null error", `{"error": null}`, ErrNoChoices},
		{"error beside choices", `{"error": "x", "choices": [{"message": {"content": "a"}}]}`, nil},
		{"control character", "{\"choices\": [{\"message\": {\"content\": \"a\x01\"}}]}", errAny},
		{"invalid UTF-8 in content", "{\"choices\": [{\"message\": {\"content\": \"a\xff\"}}]}", errAny},
		{"invalid UTF-8 in an unknown member", "{\"id\": \"\xff\", \"choices\": [{\"message\": {\"content\": \"a\"}}]}", errAny},
		{"surrogate pair", `{"choices": [{"message": {"content": "\ud83d\ude00"}}]}`, nil},
		{"nulls", `{"choices": [{"index": null, "message": {"content": "a", "refusal": null}, "logprobs": null, "finish_reason": null}], "usage": null, "error": null}`, nil},
		{"deep unknown", `{"x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `, "choices": [{"message": {"content": "a"}}]}`, nil},
		{"list with a trailing comma", `{"x": [1, 2,], "choices": [{"message": {"content": "a"}}]}`, errAny},
		{"bare number", `7`, errAny},
		{"null body", `null`, ErrNoChoices},
		{"empty", ``, errAny},
		{"BOM", "\xef\xbb\xbf" + ok, errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecode(t, []byte(tc.body))
			_, err := Decode([]byte(tc.body), NeedAll)
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("Decode: %v; want a completion", err)
			case tc.want == errAny && err == nil:
				t.Error("Decode took it; want an error")
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Errorf("Decode: %v; want %v", err, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// A list the lean path passes over is checked as JSON only: a mistyped
// member there goes unnoticed with NeedScore, is refused with NeedAll.
func TestSkippedListsAreCheckedAsJSON(t *testing.T) {
	body := []byte(`{"choices": [{"message": {"content": "a 7"}, "logprobs": {"content": [` +
		`{"token": "a", "logprob": -0.1, "top_logprobs": [{"token": 5, "logprob": "x"}]}, ` +
		`{"token": " 7", "logprob": -0.2, "top_logprobs": [{"token": " 7", "logprob": -0.2}]}]}}]}`)
	if _, err := Decode(body, NeedAll); err == nil {
		t.Error("NeedAll took a mistyped alternative")
	}
	c, err := Decode(body, NeedScore)
	if err != nil {
		t.Fatalf("NeedScore: %v", err)
	}
	if top := c.Choices[0].Tokens[0].Top; top != nil {
		t.Errorf("the skipped list was kept: %+v", top)
	}
	checkDecode(t, body)
}

// The lean decode keeps the alternatives of the score's tokens and of the
// token after each, and drops the rest.
func TestDecodeKeepsWhatScoringReads(t *testing.T) {
	alts := func(toks ...string) string {
		var parts []string
		for _, s := range toks {
			parts = append(parts, fmt.Sprintf(`{"token": %q, "logprob": -0.5}`, s))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	tok := func(text string, top string) string {
		return fmt.Sprintf(`{"token": %q, "logprob": -0.1, "top_logprobs": %s}`, text, top)
	}
	body := `{"choices": [{"message": {"content": "ok 1 0}"}, "logprobs": {"content": [` + strings.Join([]string{
		tok("ok", alts("ok", "no", "fine")),                      // 0: no digit: dropped
		tok(" ", alts(" ", "  ", " 100")),                        // 1: dropped
		tok("1", alts("1", "9", "8")),                            // 2: the score's first digit: kept
		tok("0", alts("0", "}", "5")),                            // 3: digit, and after one: kept
		tok("}", alts("}", ",", "25")),                           // 4: after a digit: kept
		tok(" fine", alts(" fine", "42")),                        // 5: dropped
		`{"top_logprobs": ` + alts("x", "y") + `, "token": "z"}`, // 6: text after its list, no digit: dropped
		`{"top_logprobs": ` + alts("3", "4") + `, "token": "3"}`, // 7: text after its list, a digit: kept
		`{"top_logprobs": ` + alts("a", "b") + `, "token": "c"}`, // 8: after a digit: kept
	}, ", ") + `]}}]}`
	lean, err := Decode([]byte(body), NeedScore)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, tk := range lean.Choices[0].Tokens {
		got = append(got, len(tk.Top))
	}
	if want := []int{0, 0, 3, 3, 3, 0, 0, 2, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("alternatives kept per token = %v; want %v", got, want)
	}
	checkDecode(t, []byte(body))
}

// Usage is read whatever else the block holds (cached tokens are a part
// of prompt_tokens, not an addition); a missing or null block is nil.
func TestDecodeUsage(t *testing.T) {
	choices := `"choices": [{"message": {"content": "a"}}]`
	tests := []struct {
		body string
		want *Usage
	}{
		{`{` + choices + `, "usage": {"prompt_tokens": 412, "completion_tokens": 36, "total_tokens": 448, "prompt_tokens_details": {"cached_tokens": 384, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}}`, &Usage{PromptTokens: 412, CompletionTokens: 36, CachedTokens: 384}},
		{`{` + choices + `, "usage": {"prompt_tokens": 412, "completion_tokens": 36, "prompt_tokens_details": null}}`, &Usage{PromptTokens: 412, CompletionTokens: 36}},
		{`{` + choices + `, "usage": {"prompt_tokens": 412, "completion_tokens": 36, "prompt_tokens_details": {}}}`, &Usage{PromptTokens: 412, CompletionTokens: 36}},
		{`{` + choices + `, "usage": {"prompt_tokens": 3}}`, &Usage{PromptTokens: 3}},
		{`{` + choices + `, "usage": {}}`, &Usage{}},
		{`{` + choices + `, "usage": null}`, nil},
		{`{` + choices + `}`, nil},
	}
	for _, tc := range tests {
		c, err := Decode([]byte(tc.body), NeedScore)
		if err != nil || !reflect.DeepEqual(c.Usage, tc.want) {
			t.Errorf("%s: usage %+v (%v); want %+v", tc.body, c.Usage, err, tc.want)
		}
	}
	if _, err := Decode([]byte(`{`+choices+`, "usage": {"prompt_tokens": 1.5}}`), NeedScore); err == nil {
		t.Error("a fractional token count was taken")
	}
	if _, err := Decode([]byte(`{`+choices+`, "usage": {"prompt_tokens": 4, "prompt_tokens_details": {"cached_tokens": "2"}}}`), NeedScore); err == nil {
		t.Error("a cached_tokens string was taken")
	}
}

// Choices come back in index order.
func TestDecodeOrdersChoices(t *testing.T) {
	c, err := Decode([]byte(`{"choices": [{"index": 2, "message": {"content": "c"}}, {"index": 0, "message": {"content": "a"}}, {"index": 1, "message": {"content": "b"}}]}`), NeedScore)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range c.Choices {
		got = append(got, ch.Content)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("choices %v; want %v", got, want)
	}
}

// FuzzDecode holds Decode to the generic decode on any body.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}`,
		`{"choices": [{"index": 1, "message": {"content": "b"}, "logprobs": {"content": [{"token": "b", "logprob": -0.1, "top_logprobs": [{"token": "b", "logprob": -0.1}]}]}}, {"index": 0, "message": {"content": "a"}}]}`,
		`{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": 1}], "token": "a"}, {"token": "\u0031", "top_logprobs": [null]}]}}]}`,
		`{"error": {"message": "boom"}}`, `{"choices": []}`, `{"usage": null, "choices": [{}]}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	g := &replyGen{r: rand.New(rand.NewPCG(7, 7))}
	for range 6 {
		body, _ := g.reply()
		f.Add(body)
	}
	f.Add(benchReply(f))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, body)
		c, err := Decode(body, NeedScore)
		if err == nil && len(c.Choices) == 0 {
			t.Fatal("a completion without choices was accepted")
		}
	})
}

// BenchmarkDecodeReply decodes one fakejudge-style scoring reply (36
// tokens × 20 alternatives): keeping what scoring reads, keeping every
// token, and json.Unmarshal of the plain structs.
func BenchmarkDecodeReply(b *testing.B) {
	spaced := benchReply(b)
	var compact bytes.Buffer
	if err := json.Compact(&compact, spaced); err != nil {
		b.Fatal(err)
	}
	for _, body := range []struct {
		name string
		b    []byte
	}{{"", spaced}, {"_compact", compact.Bytes()}} {
		for _, tc := range []struct {
			name   string
			decode func([]byte) (Completion, error)
		}{
			{"score_tokens", func(b []byte) (Completion, error) { return Decode(b, NeedScore) }},
			{"all_tokens", func(b []byte) (Completion, error) { return Decode(b, NeedAll) }},
			{"generic", DecodeGeneric},
		} {
			b.Run(tc.name+body.name, func(b *testing.B) {
				b.SetBytes(int64(len(body.b)))
				b.ReportAllocs()
				cputime.Report(b)
				for b.Loop() {
					if _, err := tc.decode(body.b); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// decodeAllocBudget: decoding one scoring reply, 36 tokens × 20
// alternatives, whatever is kept (checked by scripts/test; counts, not
// time, so it holds on a loaded machine). encoding/json made ~990
// allocations of it, json.Unmarshal of the plain structs ~275; the token
// path makes the completion's few: the choices, the message strings, the
// usage, and per choice the tokens, the alternatives and their text. A
// change that goes over it has put per-token or per-alternative work back
// on the path; raise it only with a reason, said in bench/README.md.
const decodeAllocBudget = 12

func TestDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	body := benchReply(t)
	for _, need := range []Need{NeedScore, NeedAll} {
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := Decode(body, need); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("need %d: %.0f allocations per reply", need, allocs)
		if allocs > decodeAllocBudget {
			t.Errorf("decoding a 20-alternative reply (need %d) makes %.0f allocations; the budget is %d", need, allocs, decodeAllocBudget)
		}
	}
}

// An error names where in the body it is, as json.Unmarshal's do.
func TestDecodeErrorsNameTheValue(t *testing.T) {
	for _, tc := range []struct{ body, where string }{
		{`{"choices": [{"logprobs": {"content": [{"token": "7", "logprob": "high"}]}}]}`, `"/choices/0/logprobs/content/0/logprob"`},
		{`{"choices": [{"logprobs": {"content": [{"token": "a"}, 7]}}]}`, `"/choices/0/logprobs/content/1"`},
		{`{"choices": [{"logprobs": {"content": [{"token": "7", "top_logprobs": [{"logprob": -1e999}]}]}}]}`, `"/choices/0/logprobs/content/0/top_logprobs/0/logprob"`},
		{`{"choices": [{"logprobs": {"content": {"token": "a"}}}]}`, `"/choices/0/logprobs/content"`},
	} {
		_, err := Decode([]byte(tc.body), NeedScore)
		_, gerr := DecodeGeneric([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.where) {
			t.Errorf("%s: error %v; want one within %s (the generic decode's: %v)", tc.body, err, tc.where, gerr)
		}
	}
}
