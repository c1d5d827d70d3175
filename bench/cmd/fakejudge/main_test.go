package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// TestCachedRepliesAreJudgetests: a reply served from the encoded-reply
// cache is, but for its id and timestamp, the body judgetest encodes for
// the same reply — on the first request (encoded) and on later ones
// (cached).
func TestCachedRepliesAreJudgetests(t *testing.T) {
	serve := func(f *fake) string {
		return judgetest.New(t, judgetest.WithoutRecording(), judgetest.WithDefault(judgetest.ReplyFunc(f.reply))).URL()
	}
	reference := newFake(0, 20)
	reference.encoded = nil
	refURL, cachedURL := serve(reference), serve(newFake(0, 20))

	requests := []string{
		`{"model":"m","messages":[{"role":"user","content":"case A <<<BEGIN TEST CASE>>> An integer from 1 to 5"}],"logprobs":true,"top_logprobs":20}`,
		`{"model":"m","messages":[{"role":"user","content":"case B <<<BEGIN TEST CASE>>> An integer from 0 to 10, 1. \"reason\""}],"logprobs":true,"top_logprobs":5}`,
		`{"model":"m","messages":[{"role":"user","content":"case C"}],"logprobs":true,"top_logprobs":20,"response_format":{"type":"json_schema","json_schema":{"name":"s",` +
			`"schema":{"type":"object","properties":{"reason":{"type":"string"},"score":{"type":"integer","minimum":0,"maximum":10}},"required":["reason","score"]}}}}`,
		`{"model":"other","messages":[{"role":"user","content":"concise evaluation steps that a judge will follow"}],"logprobs":true,"top_logprobs":3}`,
		`{"model":"m","messages":[{"role":"user","content":"concise evaluation steps that a judge will follow"}]}`,
		`{"model":"m","n":2,"messages":[{"role":"user","content":"case D <<<BEGIN TEST CASE>>>"}],"logprobs":true,"top_logprobs":20}`,
	}
	post := func(url, body string) string {
		resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
		}
		return string(b)
	}
	volatile := regexp.MustCompile(`"id":"chatcmpl-judgetest-\d+","object":"chat.completion","created":\d+,`)
	for round := range 3 {
		for i, req := range requests {
			want := volatile.ReplaceAllString(post(refURL, req), "")
			got := volatile.ReplaceAllString(post(cachedURL, req), "")
			if got != want {
				t.Fatalf("round %d, request %d:\ngot  %s\nwant %s", round, i, got, want)
			}
		}
	}
}
