package judgetest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentanvil/anvil/host/judgetest"
)

// A fake OpenAI-compatible judge: scripted replies by what the prompt
// says, with the score token's log-probabilities, over real HTTP.
func ExampleServer() {
	s := judgetest.NewServer()
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer s.Close()
	s.On(judgetest.ContainsMessage("Sydney"), judgetest.JSONScoreReply("Wrong capital.", "2", map[string]float64{"2": .9, "3": .1}))

	body := `{"model": "m", "messages": [{"role": "user", "content": "Is Sydney the capital?"}]}`
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(b), `\"score\": 2`), s.Calls())
	// Output: 200 true 1
}

// A judge with a known spread: each distinct request gets 2, 5, 9, 2, …
// on its repeats, however requests for different cases interleave.
func ExamplePerRequest() {
	s := judgetest.NewServer(judgetest.WithDefault(judgetest.PerRequest(
		judgetest.JSONScoreReply("low", "2", nil),
		judgetest.JSONScoreReply("mid", "5", nil),
		judgetest.JSONScoreReply("high", "9", nil),
	)))
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ask := func(question string) string {
		body := fmt.Sprintf(`{"model": "m", "messages": [{"role": "user", "content": %q}]}`, question)
		resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		i := strings.Index(string(b), `\"score\": `)
		return string(b)[i+len(`\"score\": `) : i+len(`\"score\": `)+1]
	}
	fmt.Println(ask("a"), ask("b"), ask("a"), ask("a"), ask("b"), ask("a"))
	// Output: 2 2 5 9 5 2
}
