package openaiwire

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// Bodies for the tests: chat completions the way real servers vary them,
// and a scoring reply as bench/cmd/fakejudge sends it.

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// replyGen writes chat completion bodies the way real servers vary them:
// key order, escapes, exponents, nulls, unknown fields, split scores.
type replyGen struct {
	r *rand.Rand
	b strings.Builder
}

func (g *replyGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// str writes s as a JSON string, in one of several legal spellings.
func (g *replyGen) str(s string) {
	switch g.r.IntN(4) {
	case 0: // encoding/json, HTML-escaped (\u003c for <)
		b, _ := json.Marshal(s)
		g.b.Write(b)
	case 1: // every non-ASCII rune as \u escapes (Python's ensure_ascii), / as \/
		g.b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				g.b.WriteByte('\\')
				g.b.WriteRune(r)
			case r == '/':
				g.b.WriteString(`\/`)
			case r < 0x20 || r >= 0x7f:
				if r > 0xffff {
					r1, r2 := 0xd800+((r-0x10000)>>10), 0xdc00+((r-0x10000)&0x3ff)
					fmt.Fprintf(&g.b, `\u%04x\u%04X`, r1, r2)
				} else {
					fmt.Fprintf(&g.b, `\u%04x`, r)
				}
			default:
				g.b.WriteRune(r)
			}
		}
		g.b.WriteByte('"')
	case 2: // digits as \u escapes
		g.b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				g.b.WriteByte('\\')
				g.b.WriteRune(r)
			case r == '\n':
				g.b.WriteString(`\n`)
			case r == '\t':
				g.b.WriteString(`\t`)
			case r < 0x20:
				fmt.Fprintf(&g.b, `\u%04x`, r)
			case '0' <= r && r <= '9' && g.r.IntN(2) == 0:
				fmt.Fprintf(&g.b, `\u%04x`, r)
			default:
				g.b.WriteRune(r)
			}
		}
		g.b.WriteByte('"')
	default: // minimal escaping, raw UTF-8
		g.b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				g.b.WriteByte('\\')
				g.b.WriteRune(r)
			case r < 0x20:
				fmt.Fprintf(&g.b, `\u%04x`, r)
			default:
				g.b.WriteRune(r)
			}
		}
		g.b.WriteByte('"')
	}
}

func (g *replyGen) float(f float64) {
	switch g.r.IntN(3) {
	case 0:
		g.b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case 1:
		g.b.WriteString(strconv.FormatFloat(f, 'e', -1, 64))
	default:
		g.b.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
	}
}

// unknown writes a value of a field no decoder reads.
func (g *replyGen) unknown() {
	g.b.WriteString(g.pick(`null`, `true`, `"fp_123"`, `1700000000`, `-1.5E+3`, `[]`, `{}`,
		`{"cached_tokens": 0, "audio": [1, 2, {"x": null}]}`, `[{"a": "}{]["}, "\"", 3.25e-7]`))
}

// members writes an object's members in random order, some unknown ones
// mixed in.
func (g *replyGen) members(known map[string]func()) {
	keys := make([]string, 0, len(known)+2)
	for k := range known {
		keys = append(keys, k)
	}
	for range g.r.IntN(3) {
		keys = append(keys, g.pick("id", "object", "bytes", "system_fingerprint", "extra"))
	}
	g.r.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
	g.b.WriteByte('{')
	seen := map[string]bool{}
	first := true
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if !first {
			g.b.WriteString(g.pick(",", ", ", ",\n  "))
		}
		first = false
		g.b.WriteString(`"` + k + `"` + g.pick(":", ": "))
		if f, ok := known[k]; ok {
			f()
		} else {
			g.unknown()
		}
	}
	g.b.WriteByte('}')
}

// genTokens cuts a reply text into tokens, the score's digits sometimes
// one per token, and gives each a list of alternatives.
func (g *replyGen) genTokens(text string) []abi.TokenLogprob {
	var toks []abi.TokenLogprob
	for len(text) > 0 {
		n := 1 + g.r.IntN(min(len(text), 6))
		if isDigit(text[0]) && g.r.IntN(2) == 0 {
			n = 1 // digit by digit, as some tokenizers write numbers
		}
		// Do not cut inside a UTF-8 sequence.
		for n < len(text) && text[n]&0xc0 == 0x80 {
			n++
		}
		toks = append(toks, abi.TokenLogprob{Token: text[:n], Logprob: -g.r.Float64() * 0.5})
		text = text[n:]
	}
	pool := []string{"1", "0", "10", " 10", "7", " 7", "8", "9", "2", "}", ",", " ", "\"", "score", "٧", "7.0",
		"-", "-3", "100", "½", "é", "<", "\n", "\x01", "a1", "1a", "5", "6", " alt", "x12y"}
	for i := range toks {
		if g.r.IntN(8) == 0 {
			continue // no top_logprobs at all
		}
		k := g.r.IntN(21)
		toks[i].Top = append(toks[i].Top, abi.TopLogprob{Token: toks[i].Token, Logprob: toks[i].Logprob})
		for range k {
			lp := -g.r.ExpFloat64() * 3
			if g.r.IntN(10) == 0 {
				lp = -1.5e-5 * g.r.Float64()
			}
			toks[i].Top = append(toks[i].Top, abi.TopLogprob{Token: g.pick(pool...), Logprob: lp})
		}
	}
	return toks
}

// reply writes a whole body; the returned strings are the choices' contents.
func (g *replyGen) reply() (body []byte, contents []string) {
	g.b.Reset()
	nChoices := 1
	if g.r.IntN(6) == 0 {
		nChoices = 2 + g.r.IntN(2)
	}
	indexes := g.r.Perm(nChoices)
	known := map[string]func(){}
	known["choices"] = func() {
		g.b.WriteByte('[')
		for c := range nChoices {
			if c > 0 {
				g.b.WriteString(", ")
			}
			content := g.content()
			contents = append(contents, content)
			toks := g.genTokens(content)
			g.choice(indexes[c], content, toks)
		}
		g.b.WriteByte(']')
	}
	switch g.r.IntN(5) {
	case 0: // usage missing
	case 1:
		known["usage"] = func() { g.b.WriteString("null") }
	case 2:
		known["usage"] = func() { g.b.WriteString(`{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}`) }
	default:
		known["usage"] = func() {
			fmt.Fprintf(&g.b, `{"prompt_tokens": %d, "completion_tokens": %d, "total_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0}}`,
				g.r.IntN(900), g.r.IntN(90))
		}
	}
	if g.r.IntN(10) == 0 {
		known["error"] = func() { g.b.WriteString(`null`) }
	}
	g.members(known)
	return []byte(g.b.String()), contents
}

func (g *replyGen) content() string {
	reason := g.pick("Step 2 is missing; 3 of 4 facts hold.", "All good.", "Covers 10/10 points", "", "ça va — «bien» 😀",
		"quote \" backslash \\ tab \t newline \n", "<b>&</b>", "score: 3 but", "1.2.3 and 7/10")
	switch g.r.IntN(8) {
	case 0:
		return fmt.Sprintf(`{"reason": %q, "score": %s}`, reason, g.pick("7", "7.0", "10", "1", "0", "-3", "10.00"))
	case 1:
		return fmt.Sprintf(`{"score": %s, "reason": %q}`, g.pick("7", "10", "4"), reason)
	case 2:
		return fmt.Sprintf("%s\nScore: %s", reason, g.pick("7", "10", "2"))
	case 3:
		return fmt.Sprintf("```json\n{\"reason\": %q, \"score\": \"%s\"}\n```", reason, g.pick("8", "10"))
	case 4:
		return reason
	case 5:
		return fmt.Sprintf(`{"reason": %q, "score": %s}`, reason, g.pick("7", "9", "10", "3"))
	default:
		return fmt.Sprintf(`{"reason":%q,"score":%s}`, reason, g.pick("5", "10", "6"))
	}
}

func (g *replyGen) choice(index int, content string, toks []abi.TokenLogprob) {
	known := map[string]func(){
		"index": func() { g.b.WriteString(strconv.Itoa(index)) },
		"message": func() {
			m := map[string]func(){
				"role": func() { g.b.WriteString(`"assistant"`) },
			}
			switch g.r.IntN(6) {
			case 0: // refusal, no content
				m["content"] = func() { g.b.WriteString("null") }
				m["refusal"] = func() { g.str("I can't help with that.") }
			case 1:
				m["content"] = func() { g.str(content) }
			default:
				m["content"] = func() { g.str(content) }
				m["refusal"] = func() { g.b.WriteString("null") }
			}
			g.members(m)
		},
		"finish_reason": func() {
			g.b.WriteString(g.pick(`"stop"`, `"stop"`, `"length"`, `"content_filter"`, `null`, `"tool_calls"`))
		},
	}
	switch g.r.IntN(6) {
	case 0: // no logprobs key
	case 1:
		known["logprobs"] = func() { g.b.WriteString("null") }
	case 2:
		known["logprobs"] = func() { g.b.WriteString(`{"content": null, "refusal": null}`) }
	default:
		known["logprobs"] = func() {
			g.members(map[string]func(){
				"content": func() {
					g.b.WriteByte('[')
					for i, t := range toks {
						if i > 0 {
							g.b.WriteString(g.pick(",", ", "))
						}
						g.token(t)
					}
					g.b.WriteByte(']')
				},
				"refusal": func() { g.b.WriteString("null") },
			})
		}
	}
	g.members(known)
}

func (g *replyGen) token(t abi.TokenLogprob) {
	known := map[string]func(){
		"token":   func() { g.str(t.Token) },
		"logprob": func() { g.float(t.Logprob) },
		"bytes":   func() { g.b.WriteString(g.pick("null", "[55]", "[]")) },
	}
	if t.Top != nil || g.r.IntN(2) == 0 {
		known["top_logprobs"] = func() {
			g.b.WriteByte('[')
			for k, a := range t.Top {
				if k > 0 {
					g.b.WriteString(", ")
				}
				g.members(map[string]func(){
					"token":   func() { g.str(a.Token) },
					"logprob": func() { g.float(a.Logprob) },
					"bytes":   func() { g.b.WriteString("[1, 2]") },
				})
			}
			g.b.WriteByte(']')
		}
	}
	g.members(known)
}

// benchReply is a scoring reply as bench/cmd/fakejudge sends it: a JSON
// object with a reason and a score, every token with 20 alternatives.
func benchReply(tb testing.TB) []byte {
	tb.Helper()
	content := `{"reason": "The actual output addresses the input directly and agrees with the expected output on the main points.", "score": 8}`
	g := &replyGen{r: rand.New(rand.NewPCG(1, 1))}
	var b strings.Builder
	b.WriteString(`{"id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "bench-judge", "choices": [{"index": 0, "message": {"role": "assistant", "content": `)
	c, _ := json.Marshal(content)
	b.Write(c)
	b.WriteString(`, "refusal": null}, "logprobs": {"content": [`)
	toks := g.genTokensPlain(content)
	for i, t := range toks {
		if i > 0 {
			b.WriteString(", ")
		}
		tj, _ := json.Marshal(t.Token)
		fmt.Fprintf(&b, `{"token": %s, "logprob": %s, "bytes": %s, "top_logprobs": [`, tj, strconv.FormatFloat(t.Logprob, 'g', -1, 64), byteList(t.Token))
		for k := range 20 {
			if k > 0 {
				b.WriteString(", ")
			}
			alt, lp := t.Token, t.Logprob
			if k > 0 {
				alt, lp = fmt.Sprintf(" alt%c%c", 'a'+k%26, 'a'+k/26), math.Log(1e-4)-0.25*float64(k)
			}
			aj, _ := json.Marshal(alt)
			fmt.Fprintf(&b, `{"token": %s, "logprob": %s, "bytes": %s}`, aj, strconv.FormatFloat(lp, 'g', -1, 64), byteList(alt))
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`], "refusal": null}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 412, "completion_tokens": 36, "total_tokens": 448}}`)
	return []byte(b.String())
}

// genTokensPlain cuts text like judgetest.Tokens would: words, digit runs,
// single other characters.
func (g *replyGen) genTokensPlain(text string) []abi.TokenLogprob {
	var out []abi.TokenLogprob
	for len(text) > 0 {
		n := 1
		switch c := text[0]; {
		case c == ' ' || ('a' <= c|0x20 && c|0x20 <= 'z'):
			for n < len(text) && 'a' <= text[n]|0x20 && text[n]|0x20 <= 'z' {
				n++
			}
		case isDigit(c):
			for n < len(text) && isDigit(text[n]) {
				n++
			}
		}
		out = append(out, abi.TokenLogprob{Token: text[:n], Logprob: -0.01})
		text = text[n:]
	}
	return out
}

func byteList(s string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = strconv.Itoa(int(s[i]))
	}
	return "[" + strings.Join(parts, ",") + "]"
}
