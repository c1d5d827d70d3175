package judge

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The byte-at-a-time scanners the word-at-a-time ones (replyscan.go)
// replaced, kept as their reference.

func refStringEnd(buf []byte, k int) (end int, escaped, ok bool) {
	for k < len(buf) {
		c := buf[k]
		switch {
		case c == '"':
			return k, escaped, true
		case c == '\\':
			escaped = true
			if k+1 >= len(buf) {
				return 0, false, false
			}
			switch buf[k+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				k += 2
			case 'u':
				if k+6 > len(buf) {
					return 0, false, false
				}
				for _, h := range buf[k+2 : k+6] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				k += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			k++
		}
	}
	return 0, false, false
}

func refScanNumber(buf []byte, p int) (end int, exp, ok bool) {
	n := len(buf)
	if p < n && buf[p] == '-' {
		p++
	}
	switch {
	case p < n && buf[p] == '0':
		p++
	case p < n && '1' <= buf[p] && buf[p] <= '9':
		p++
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	default:
		return 0, false, false
	}
	if p < n && buf[p] == '.' {
		p++
		if p >= n || !isASCIIDigit(buf[p]) {
			return 0, false, false
		}
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	}
	if p < n && (buf[p] == 'e' || buf[p] == 'E') {
		exp = true
		p++
		if p < n && (buf[p] == '+' || buf[p] == '-') {
			p++
		}
		if p >= n || !isASCIIDigit(buf[p]) {
			return 0, false, false
		}
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	}
	return p, exp, true
}

func refScanNumberList(buf []byte, p int) (end int, ok bool) {
	n := len(buf)
	if p >= n || buf[p] != '[' {
		return 0, false
	}
	p = skipSpace(buf, p+1)
	if p < n && buf[p] == ']' {
		return p + 1, true
	}
	for {
		e, _, ok := refScanNumber(buf, p)
		if !ok {
			return 0, false
		}
		p = skipSpace(buf, e)
		if p >= n {
			return 0, false
		}
		switch buf[p] {
		case ',':
			p = skipSpace(buf, p+1)
		case ']':
			return p + 1, true
		default:
			return 0, false
		}
	}
}

// checkScanners compares every word-at-a-time scanner with its reference
// from every offset of buf, so that each word boundary and the buffer's
// end fall everywhere in the input.
func checkScanners(t *testing.T, buf []byte) {
	t.Helper()
	for p := 0; p <= len(buf); p++ {
		e, esc, ok := stringEnd(buf, p)
		we, wesc, wok := refStringEnd(buf, p)
		if e != we || esc != wesc || ok != wok {
			t.Fatalf("stringEnd(%q, %d) = %d, %v, %v; want %d, %v, %v", buf, p, e, esc, ok, we, wesc, wok)
		}
		n, exp, ok := scanNumber(buf, p)
		wn, wexp, wok := refScanNumber(buf, p)
		if n != wn || exp != wexp || ok != wok {
			t.Fatalf("scanNumber(%q, %d) = %d, %v, %v; want %d, %v, %v", buf, p, n, exp, ok, wn, wexp, wok)
		}
		l, ok := scanNumberList(buf, p)
		wl, wok := refScanNumberList(buf, p)
		if l != wl || ok != wok {
			t.Fatalf("scanNumberList(%q, %d) = %d, %v; want %d, %v", buf, p, l, ok, wl, wok)
		}
		if p < len(buf) && buf[p] == '[' {
			// The compact form must never accept what the reference refuses
			// or end elsewhere.
			if c, ok := compactIntList(buf, p+1); ok && (!wok || c != wl) {
				t.Fatalf("compactIntList(%q, %d) = %d; reference %d, %v", buf, p+1, c, wl, wok)
			}
		}
	}
}

var scanInputs = []string{
	``,
	`"`,
	`abc"`,
	`abcdefg"`,
	`abcdefgh"`,
	`abcdefghi"`,
	`abcdefghijklmnopqrstuvwxyz0123456789"`,
	"a\x00b\"",
	"abcdefg\x1f\"",
	"abcdefgh\x7f\x80\xff\"",
	`a\"b\\c\/d\be\ff\ng\rh\ti"`,
	`\u00e9\u00E9\uD83D\ude00"`,
	`\u00g9"`, `\u00"`, `\x"`, `\`, `abcdefg\`, `abcdefg\u123`,
	`"quoted" and "again"`,
	`0`, `-0`, `-`, `01`, `-01`, `1.`, `1.5`, `-9.460340371976183`, `-9.210340371976182e-05`,
	`1e`, `1e+`, `1E-7`, `12345678901234567890`, `0.000000000000000000001`, `.5`, `+1`, `1.5e+308`, `-1e999`,
	`[]`, `[ ]`, `[1]`, `[0]`, `[00]`, `[01]`, `[10]`, `[1,]`, `[,1]`, `[1,,2]`, `[1 ,2]`, `[ 1, 2 ]`,
	`[32,97,108,116,97]`, `[32,97,108,116,97`, `[32,97,108,116,97}`, `[32,97,108,116,97],`,
	`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`,
	`[123456789012,0,0,0]`, `[0,0,0,0,0,0,0,0,0,0,0]`, `[0,00]`, `[1,0,01]`, `[1,0.5,2]`, `[1,-2,3]`, `[1,2e3]`, `[1,2E3]`,
	`[1234567,0]`, `[12345678]`, `[1,2,3,04]`, `[1,2,3,4]x`, `["a"]`, `[1,"a"]`, `[[1]]`,
	`{"token": " alta", "logprob": -9.46, "bytes": [32,97,108,116,97]}`,
}

func TestScannersMatchReference(t *testing.T) {
	for _, in := range scanInputs {
		checkScanners(t, []byte(in))
		// Behind a prefix, and cut short, to move the word boundaries.
		checkScanners(t, []byte("xyz"+in+"]}"))
		if len(in) > 1 {
			checkScanners(t, []byte(in[:len(in)-1]))
		}
	}
}

// FuzzScanners: the word-at-a-time string, number and number-list
// scanners against their byte-at-a-time references.
func FuzzScanners(f *testing.F) {
	for _, in := range scanInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		checkScanners(t, buf)
	})
}

// The key words the fast paths compare with are the keys' bytes.
func TestMemberKeyWords(t *testing.T) {
	for _, tc := range []struct {
		word uint64
		mask uint64
		key  string
	}{
		{keyTokenWord, mask7, `"token"`},
		{keyBytesWord, mask7, `"bytes"`},
		{keyLogprobBeg, ^uint64(0), `"logprob`},
		{keyTopBeg, ^uint64(0), `"top_log`},
		{altStartWord, ^uint64(0), `{"token"`},
	} {
		buf := []byte(tc.key + strings.Repeat("\x00", 8))
		if got := load64(buf, 0) & tc.mask; got != tc.word {
			t.Errorf("%s: word %#x; want %#x", tc.key, tc.word, got)
		}
	}
	for _, tc := range []struct {
		in   string
		bit  int
		rest string
	}{
		{`"token": 1`, memberToken, `: 1`},
		{`"bytes": 1`, memberBytes, `: 1`},
		{`"logprob": 1`, memberLogprob, `: 1`},
		{`"top_logprobs": 1`, memberTop, `: 1`},
		{`"tokens": 1`, 0, `"tokens": 1`},
		{`"logprobs": 1`, 0, `"logprobs": 1`},
		{`"top_logprob": 1`, 0, `"top_logprob": 1`},
		{`"Token": 1`, 0, `"Token": 1`},
		{`"token"`, 0, `"token"`}, // too near the end for a word: the general path
		{`"logprob`, 0, `"logprob`},
	} {
		bit, end := memberKey([]byte(tc.in), 0)
		if bit != tc.bit || tc.in[end:] != tc.rest {
			t.Errorf("memberKey(%q) = %d, rest %q; want %d, %q", tc.in, bit, tc.in[end:], tc.bit, tc.rest)
		}
	}
}

// checkAlternativeFast compares the alternative fast paths, on an
// alternative object alone in the buffer (so that the buffer's end falls
// anywhere in it), with alternative, the general path: what a fast path
// decides, the general path decides the same way, ending at the same
// byte and keeping the same record; what it does not decide it leaves
// untouched.
func checkAlternativeFast(t *testing.T, alt []byte) {
	t.Helper()
	for _, keep := range []bool{false, true} {
		fast := replyDecoder{buf: alt, text: []byte("prefix")}
		var end int
		var ok bool
		if keep {
			end, ok = fast.keepAlternativeFast(0)
		} else {
			end, ok = fast.skipAlternativeFast(0)
		}
		if !ok {
			if string(fast.text) != "prefix" || len(fast.alts) != 0 {
				t.Fatalf("keep %v: undecided, but the decoder changed: text %q, alts %v\n%s", keep, fast.text, fast.alts, alt)
			}
			continue
		}
		general := replyDecoder{buf: alt, text: []byte("prefix")}
		gok := general.alternative(keep)
		if !gok || general.i != end || !bytes.Equal(general.text, fast.text) || len(general.alts) != len(fast.alts) ||
			(len(fast.alts) == 1 && (fast.alts[0].text != general.alts[0].text || !sameFloat(fast.alts[0].logprob, general.alts[0].logprob))) {
			t.Fatalf("keep %v: fast path ended at %d, text %q, alts %v; general path %v at %d, text %q, alts %v\n%s",
				keep, end, fast.text, fast.alts, gok, general.i, general.text, general.alts, alt)
		}
		if !keep && len(fast.alts) != 0 {
			t.Fatalf("the skip kept %v\n%s", fast.alts, alt)
		}
	}
}

// sameFloat compares bit for bit (a logprob of -0 is not 0).
func sameFloat(a, b float64) bool { return a == b && (a != 0 || 1/a == 1/b) }

var alternativeShapes = []string{
	`{"token": " alta", "logprob": -9.46, "bytes": [32,97,108,116,97]}`,
	`{"token":" alta","logprob":-9.210340371976182,"bytes":[32,97,108,116,97]}`,
	`{"token":" correctness","logprob":-0.5,"bytes":[32,99,111,114,114,101,99,116,110,101,115,115]}`,
	`{"token":"7","logprob":-0,"bytes":[55]}`,
	`{"token":"12","logprob":-1,"bytes":[49,50]}`,
	`{"token":"a 12345","logprob":-1,"bytes":[97]}`,
	`{"token":"1a2b3c4d5e6f","logprob":-1}`,
	`{"token":"\"","logprob":-1,"bytes":[34]}`,
	`{"token":"\u0031","logprob":-1}`,
	`{"token":"é","logprob":-1,"bytes":[195,169]}`,
	"{\"token\":\"\xff\",\"logprob\":-1,\"bytes\":[255]}",
	`{"token":"a","logprob":-1e-5,"bytes":[97]}`,
	`{"token":"a","logprob":-1e999,"bytes":[97]}`,
	`{"token":"a","logprob":-1,"bytes":[97 ]}`,
	`{"token":"a","logprob":-1,"bytes":[097]}`,
	`{"token":"a","logprob":-1,"bytes":[]}`,
	`{"token":"a","logprob":-1,"bytes":null}`,
	`{"token":"a","logprob":-1,"bytes":[97],"extra":1}`,
	`{"token":"a","logprob":-1,"bytes":[97],"token":"b"}`,
	`{"token":"a","logprob":-1 ,"bytes":[97]}`,
	`{"token":"a","logprob":-1,"bytes":[97] }`,
	`{"token" : "a", "logprob" : -1}`,
	`{"token":  "a","logprob":-1}`,
	`{"logprob":-1,"token":"a"}`,
	`{"token":null,"logprob":null,"bytes":null}`,
	`{"token":"a","logprob":"x"}`,
	`{}`,
	`{ }`,
	`{"token":"a"}`,
	`{"token":"a",`,
	`{"token":"a","logprob":-1,"bytes":[97]`,
}

func TestAlternativeFastPathsMatchGeneralPath(t *testing.T) {
	for _, alt := range alternativeShapes {
		for k := 0; k <= len(alt); k++ {
			checkAlternativeFast(t, []byte(alt[:k]))
			checkAlternativeFast(t, []byte(alt[:k]+strings.Repeat("]}", 40)))
		}
		checkAlternativeFast(t, []byte(alt+"]}"))
		// Room for every word the unrolled paths load.
		checkAlternativeFast(t, []byte(alt+strings.Repeat("]}", 40)))
	}
}

// The form servers send is decided by the unrolled path.
func TestSkipAlternativeAsSent(t *testing.T) {
	for _, tc := range []struct {
		alt  string
		want bool
	}{
		{`{"token": " alta", "logprob": -9.46, "bytes": [32,97,108,116,97]}]}]}]}`, true},
		{`{"token":" alta","logprob":-9.46,"bytes":[32,97,108,116,97]}]}]}]}`, true},
		{`{"token":" correctness","logprob":-0.5,"bytes":[32,99,111,114,114,101,99,116,110,101,115,115]}]}]}]}`, true},
		{`{"token":"a","logprob":-1}]}]}]}`, true},
		{`{"token":"1a2","logprob":-1}]}]}]}`, true},
		{`{"token":"12","logprob":-1}]}]}]}`, false},      // evidence
		{`{"token":"a 12345","logprob":-1}]}]}]}`, false}, // evidence, in a longer text
		{`{"token":"\"","logprob":-1}]}]}]}`, false},      // an escape
		{`{"token":"a","logprob":-1e-5}]}]}]}`, false},    // an exponent
		{`{"logprob":-1,"token":"a"}]}]}]}`, false},       // another order
		{`{"token":"a","logprob":-1,"bytes":[97 ]}]}]}`, false},
		{`{"token":"a","logprob":-1,"bytes":[97]}]}`, false}, // the list too near the end for a word
	} {
		end, ok := skipAlternativeAsSent([]byte(tc.alt), 0)
		if ok != tc.want {
			t.Errorf("%s: decided %v; want %v", tc.alt, ok, tc.want)
			continue
		}
		if ok && tc.alt[end-1] != '}' {
			t.Errorf("%s: ended at %d", tc.alt, end)
		}
		checkAlternativeFast(t, []byte(tc.alt))
	}
}

// FuzzAlternativeFastPaths: the skip and keep fast paths against the
// general path, on any alternative object.
func FuzzAlternativeFastPaths(f *testing.F) {
	for _, alt := range alternativeShapes {
		f.Add(alt)
	}
	f.Fuzz(func(t *testing.T, alt string) {
		checkAlternativeFast(t, []byte(alt))
	})
}

// keptBody puts a top_logprobs list on a digit token and on the token
// after it, so that the decoder keeps it (with or without the tokens asked
// for).
func keptBody(list string) []byte {
	return []byte(`{"choices":[{"index":0,"message":{"content":"7}"},"logprobs":{"content":[` +
		`{"token":"7","logprob":-0.1,"bytes":[55],"top_logprobs":` + list + `},` +
		`{"token":"}","logprob":-0.2,"bytes":[125],"top_logprobs":` + list + `}]},"finish_reason":"stop"}]}`)
}

// FuzzKeepAlternatives: the whole decoder, keeping a list through the
// fast path, against the general path and encoding/json.
func FuzzKeepAlternatives(f *testing.F) {
	for _, tc := range skipLists {
		f.Add(tc.list)
	}
	f.Fuzz(func(t *testing.T, list string) {
		checkSkip(t, keptBody(list))
	})
}

func TestKeepAlternativesMatchesGeneralPath(t *testing.T) {
	for _, tc := range skipLists {
		t.Run(tc.name, func(t *testing.T) { checkSkip(t, keptBody(tc.list)) })
	}
}

// asSentReply writes a generated reply as encoding/json writes it from
// structs in the servers' field order (token, logprob, bytes,
// top_logprobs; as bench/cmd/fakejudge sends it), compact or with a space
// after each colon and comma, so that the fast paths' unrolled form is
// the common one.
func asSentReply(g *replyGen, spaced bool) []byte {
	type alt struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	}
	type tok struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []alt   `json:"top_logprobs"`
	}
	byteList := func(s string) []int {
		b := make([]int, len(s))
		for i := range len(s) {
			b[i] = int(s[i])
		}
		return b
	}
	content := g.content()
	var toks []tok
	for _, t := range g.genTokens(content) {
		wt := tok{Token: t.Token, Logprob: t.Logprob, Bytes: byteList(t.Token)}
		for _, a := range t.Top {
			wt.TopLogprobs = append(wt.TopLogprobs, alt{Token: a.Token, Logprob: a.Logprob, Bytes: byteList(a.Token)})
		}
		toks = append(toks, wt)
	}
	body, err := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": content},
			"logprobs": map[string]any{"content": toks}, "finish_reason": "stop",
		}},
		"usage": map[string]int{"prompt_tokens": 12, "completion_tokens": len(toks)},
	})
	if err != nil {
		panic(err)
	}
	if spaced {
		// Inside strings too: still valid JSON, with other texts.
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte(`":`), []byte(`": `)), []byte(`,"`), []byte(`, "`))
	}
	return body
}

// The fast paths agree with the general path and encoding/json on replies
// in the form servers send, compact and spaced.
func TestFastPathsOnRepliesAsSent(t *testing.T) {
	g := &replyGen{r: rand.New(rand.NewPCG(31, 2026))}
	objects, unrolled := 0, 0
	for range 1000 {
		for _, spaced := range []bool{false, true} {
			body := asSentReply(g, spaced)
			checkSkip(t, body)
			// How many of its token and alternative objects the unrolled
			// skip takes (a token's object, with its top_logprobs, never).
			for k := 0; ; k++ {
				i := bytes.Index(body[k:], []byte(`{"token"`))
				if i < 0 {
					break
				}
				k += i
				objects++
				if _, ok := skipAlternativeAsSent(body, k); ok {
					unrolled++
				}
			}
		}
	}
	t.Logf("%d of %d objects taken by the unrolled skip", unrolled, objects)
	if unrolled < objects/2 {
		t.Errorf("the unrolled skip took %d of %d objects: the test hardly exercises it", unrolled, objects)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, benchReply(t)); err != nil {
		t.Fatal(err)
	}
	checkSkip(t, compact.Bytes())
}

// canonicalByteList is text's bytes as encoding/json writes an []int.
func canonicalByteList(text []byte) string {
	b, _ := json.Marshal(byteInts(text))
	return string(b)
}

func byteInts(text []byte) []int {
	out := make([]int, len(text))
	for i, c := range text {
		out[i] = int(c)
	}
	return out
}

// checkSameByteList: what sameByteList accepts, the reference scanner
// accepts and ends at the same byte; and it accepts text's own list.
func checkSameByteList(t *testing.T, text, list []byte) {
	t.Helper()
	if end, ok := sameByteList(list, 0, text); ok {
		if wend, wok := refScanNumberList(list, 0); !wok || wend != end {
			t.Fatalf("sameByteList(%q, %q) = %d; reference %d, %v", list, text, end, wend, wok)
		}
	}
	own := canonicalByteList(text)
	padded := []byte(own + strings.Repeat("}", 4*len(text)+8))
	end, ok := sameByteList(padded, 0, text)
	if len(text) > 0 && (!ok || end != len(own)) {
		t.Fatalf("sameByteList(%q, %q) = %d, %v; want %d, true", padded, text, end, ok, len(own))
	}
}

func TestSameByteList(t *testing.T) {
	pad := strings.Repeat("}", 40)
	for _, tc := range []struct {
		text, list string
		want       bool
	}{
		{" alta", "[32,97,108,116,97]" + pad, true},
		{"\x00\xff\x09\x0a\x63\x64", "[0,255,9,10,99,100]" + pad, true},
		{"a", "[97]" + pad, true},
		{"a", "[97]", false},                         // too near the end: not compared
		{"a", "[98]" + pad, false},                   // another byte
		{"a", "[97,98]" + pad, false},                // more bytes
		{"ab", "[97]" + pad, false},                  // fewer
		{"a", "[097]" + pad, false},                  // a leading zero
		{"a", "[ 97]" + pad, false},                  // a space
		{"a", "[97 ]" + pad, false},                  // a space
		{"ab", "[97, 98]" + pad, false},              // a space
		{"a", "[9.7e1]" + pad, false},                // another spelling of the number
		{"", "[]" + pad, false},                      // left to the other paths
		{" alta", "032,97,108,116,97]" + pad, false}, // not a list
	} {
		end, ok := sameByteList([]byte(tc.list), 0, []byte(tc.text))
		if ok != tc.want || ok && tc.list[end-1] != ']' {
			t.Errorf("sameByteList(%q, %q) = %d, %v; want %v", tc.list, tc.text, end, ok, tc.want)
		}
		checkSameByteList(t, []byte(tc.text), []byte(tc.list))
	}
	for c := range 256 {
		checkSameByteList(t, []byte{byte(c)}, nil)
		checkSameByteList(t, []byte{'a', byte(c), 'b'}, nil)
	}
}

// FuzzSameByteList: the comparison with a text's own list never accepts a
// list the reference scanner refuses, and accepts the text's own list.
func FuzzSameByteList(f *testing.F) {
	f.Add([]byte(" alta"), []byte("[32,97,108,116,97]}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}"))
	f.Add([]byte("a"), []byte("[097]}}}}}}}}}}}}}}}}"))
	f.Add([]byte("\x00\xff"), []byte("[0,255]}}}}}}}}}}}}}}}}}}}}"))
	f.Fuzz(func(t *testing.T, text, list []byte) {
		checkSameByteList(t, text, list)
	})
}
