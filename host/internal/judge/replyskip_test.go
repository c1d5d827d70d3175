package judge

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// skipBody puts a top_logprobs list on a token that cannot be the score's
// (its text has no digit and comes first, with no digit before it), so the
// lean decoder only checks the list; a second token's list is the same,
// after a digit, so it is kept.
func skipBody(list string) []byte {
	return []byte(`{"choices": [{"index": 0, "message": {"content": "a7"}, "logprobs": {"content": [` +
		`{"token": "a", "logprob": -0.1, "top_logprobs": ` + list + `}, ` +
		`{"token": "7", "logprob": -0.2, "top_logprobs": [{"token": "7", "logprob": -0.2}]}, ` +
		`{"token": "b", "logprob": -0.3, "top_logprobs": ` + list + `}]}, "finish_reason": "stop"}]}`)
}

// decodeBoth runs the one-pass decoder with the fast skip and with the
// general path alone.
func decodeBoth(body []byte, need tokenNeed) (fast, slow completion, fastOK, slowOK bool) {
	var d, s replyDecoder
	s.slowSkip = true
	fast, fastOK = d.decode(body, need)
	slow, slowOK = s.decode(body, need)
	return fast, slow, fastOK, slowOK
}

// checkSkip fails when the fast skip and the general path disagree on
// body, or decodeCompletion and encoding/json do.
func checkSkip(t *testing.T, body []byte) {
	t.Helper()
	for _, need := range []tokenNeed{needScoreTokens, needAllTokens} {
		fast, slow, fastOK, slowOK := decodeBoth(body, need)
		if fastOK != slowOK || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("need %d: fast skip %v %+v; general path %v %+v\n%s", need, fastOK, fast, slowOK, slow, body)
		}
	}
	got, gotFail := decodeCompletion("application/json", body, needAllTokens)
	want, wantFail := decodeReference(body)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotFail, wantFail) {
		t.Fatalf("decodeCompletion = %+v, %+v; reference %+v, %+v\n%s", got, gotFail, want, wantFail, body)
	}
}

// skipLists are top_logprobs lists in the shape the fast skip takes and in
// every shape it must hand to the general path (which decides: accepted,
// kept as evidence, or refused to the reference decoder).
var skipLists = []struct {
	name, list string
	fast       bool // the fast skip decides it on its own
}{
	{"empty", `[]`, true},
	{"empty with space", `[ ]`, true},
	{"ordinary", `[{"token": " alta", "logprob": -9.46, "bytes": [32,97,108,116,97]}, {"token": "x", "logprob": -10, "bytes": [120]}]`, true},
	{"compact", `[{"token":"a","logprob":-1.5,"bytes":[97]},{"token":"b","logprob":-2,"bytes":[98]}]`, true},
	{"reordered", `[{"bytes": [97], "logprob": -1.5, "token": "a"}]`, true},
	{"newlines", "[\n {\n  \"token\": \"a\",\n  \"logprob\": -1.5e-3,\r\n\t\"bytes\": [ 97 , 98 ]\n }\n]", true},
	{"nulls", `[{"token": null, "logprob": null, "bytes": null}]`, true},
	{"no bytes", `[{"token": "a", "logprob": -1}]`, true},
	{"empty object", `[{}]`, true},
	{"invalid UTF-8 in token", "[{\"token\": \"a\xff\", \"logprob\": -1}]", true},
	{"exponent in range", `[{"token": "a", "logprob": -1E+2}]`, true},
	{"single digit", `[{"token": "7", "logprob": -1}]`, true},

	{"evidence", `[{"token": " 10", "logprob": -1}]`, false},
	{"evidence twice", `[{"token": "10", "logprob": -1}, {"token": "42", "logprob": -2}]`, false},
	{"escaped token", `[{"token": "\"a\\n", "logprob": -1}]`, true},
	{"short escapes between digits", `[{"token": "1\n2\t3\/4", "logprob": -1}]`, true},
	{"escaped backslash before digits", `[{"token": "\\12", "logprob": -1}]`, false},
	{"escaped backslash before u", `[{"token": "\\u0031", "logprob": -1}]`, false},
	{"escape and invalid UTF-8", "[{\"token\": \"\\n\xff\", \"logprob\": -1}]", false},
	{"escape and valid UTF-8", `[{"token": "\"é", "logprob": -1}]`, true},
	{"unicode escape", `[{"token": "\u00e9", "logprob": -1}]`, false},
	{"escaped digits", `[{"token": "\u0031\u0032", "logprob": -1}]`, false},
	{"surrogate escape", `[{"token": "\ud83d\ude00", "logprob": -1}]`, false},
	{"unknown key", `[{"token": "a", "logprob": -1, "extra": {"x": [1, "}"]}}]`, false},
	{"capitalised key", `[{"Token": "a", "logprob": -1}]`, false},
	{"escaped key", `[{"\u0074oken": "a", "logprob": -1}]`, false},
	{"repeated token", `[{"token": "a", "token": "b", "logprob": -1}]`, false},
	{"repeated bytes", `[{"token": "a", "bytes": [1], "bytes": [2]}]`, false},
	{"token a number", `[{"token": 5, "logprob": -1}]`, false},
	{"logprob a string", `[{"token": "a", "logprob": "-1"}]`, false},
	{"logprob out of range", `[{"token": "a", "logprob": -1e999}]`, false},
	{"logprob leading zero", `[{"token": "a", "logprob": -01}]`, false},
	{"logprob bare minus", `[{"token": "a", "logprob": -}]`, false},
	{"logprob trailing dot", `[{"token": "a", "logprob": 1.}]`, false},
	{"bytes with a string", `[{"token": "a", "bytes": [1, "2"]}]`, false},
	{"bytes trailing comma", `[{"token": "a", "bytes": [1,]}]`, false},
	{"bytes an object", `[{"token": "a", "bytes": {}}]`, false},
	{"control character", "[{\"token\": \"a\x01\", \"logprob\": -1}]", false},
	{"unterminated string", `[{"token": "a`, false},
	{"missing colon", `[{"token" "a"}]`, false},
	{"trailing comma in object", `[{"token": "a",}]`, false},
	{"trailing comma in list", `[{"token": "a"},]`, true}, // the alternative is fine, the list is not
	{"not an object", `[1]`, false},
	{"null element", `[null]`, false},
	{"bad literal", `[{"token": nul}]`, false},
	{"list a string", `"x"`, false},
	{"list null", `null`, true},
}

// The fast skip takes the ordinary alternatives and hands everything else
// to the general path; either way the result is the general path's and
// encoding/json's.
func TestSkipAlternativesMatchesGeneralPath(t *testing.T) {
	for _, tc := range skipLists {
		t.Run(tc.name, func(t *testing.T) {
			body := skipBody(tc.list)
			checkSkip(t, body)
			var d replyDecoder
			d.buf = []byte(tc.list)
			_, fast := d.skipAlternativeFast(skipSpace(d.buf, 1))
			if tc.list == `[]` || tc.list == `[ ]` || tc.list == `null` || tc.list == `"x"` {
				return // no element to read
			}
			if fast != tc.fast {
				t.Errorf("fast skip decided the first alternative: %v; want %v", fast, tc.fast)
			}
		})
	}
}

// The fast skip agrees with the general path on generated replies.
func TestSkipAlternativesOnGeneratedReplies(t *testing.T) {
	g := &replyGen{r: rand.New(rand.NewPCG(21, 2026))}
	for range 2000 {
		body, _ := g.reply()
		checkSkip(t, body)
	}
	checkSkip(t, benchReply(t))
}

// FuzzSkipAlternatives: the fast skip against the general path it stands
// in for, and the whole decoder against encoding/json, on arbitrary
// top_logprobs lists.
func FuzzSkipAlternatives(f *testing.F) {
	for _, tc := range skipLists {
		f.Add(tc.list)
	}
	f.Fuzz(func(t *testing.T, list string) {
		checkSkip(t, skipBody(list))
	})
}

// tokenBody puts a generated token's object (as text) between two
// ordinary ones, the first a digit so that the token's own alternatives
// follow a possible score.
func tokenBody(tok string) []byte {
	return []byte(`{"choices": [{"message": {"content": "7x"}, "logprobs": {"content": [` +
		`{"token":"7","logprob":-0.1,"bytes":[55],"top_logprobs":[{"token":"7","logprob":-0.1},{"token":"8","logprob":-3}]},` +
		tok + `,` +
		`{"token":" end","logprob":-0.2,"bytes":null,"top_logprobs":[{"token":" end","logprob":-0.2},{"token":" 12","logprob":-9}]}]}}]}`)
}

var tokenShapes = []string{
	`{"token":"x","logprob":-0.5,"bytes":[120],"top_logprobs":[{"token":"x","logprob":-0.5,"bytes":[120]}]}`,
	`{"top_logprobs":[{"token":"x","logprob":-0.5}],"token":"x","logprob":-0.5}`,
	`{"token":"9","logprob":-1e-3,"bytes":null,"top_logprobs":null}`,
	`{ "token" : "é" , "logprob" : 0 , "top_logprobs" : [ ] }`,
	`{"token":null,"logprob":-1,"top_logprobs":[]}`,
	`{"token":"a\nb","logprob":-1}`,
	`{"token":"\u0037","logprob":-1,"top_logprobs":[{"token":"7","logprob":-1}]}`,
	"{\"token\":\"\xff\",\"logprob\":-1}",
	`{"token":"x","logprob":null}`,
	`{"token":"x","logprob":-1e999}`,
	`{"token":"x","token":"y","logprob":-1}`,
	`{"token":"x","logprob":-1,"extra":{"a":[1]}}`,
	`{"token":"x","logprob":-1,"bytes":[1,"2"]}`,
	`{"token":"x","logprob":-1,"top_logprobs":{}}`,
	`{"token":"x","logprob":-1,}`,
	`{}`,
	`[]`,
}

// The token fast path reads what token, the general path, reads, and
// hands back whatever it is unsure of with the decoder as it was.
func TestTokenFastMatchesGeneralPath(t *testing.T) {
	for _, tok := range tokenShapes {
		checkSkip(t, tokenBody(tok))
	}
}

// FuzzTokenFast: the token fast path against the general path and
// encoding/json, on any token object.
func FuzzTokenFast(f *testing.F) {
	for _, tok := range tokenShapes {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		checkSkip(t, tokenBody(tok))
	})
}
