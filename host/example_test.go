package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

// Evaluate two cases with a G-Eval metric, against a fake judge that
// scores the wrong answer 2 and the right one 9.
func ExampleEvaluate() {
	judge := judgetest.NewServer()
	url, err := judge.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer judge.Close()
	judge.On(judgetest.ContainsMessage(`"steps"`), judgetest.Reply{Content: `{"steps": ["Compare with the expected output."]}`})
	judge.On(judgetest.ContainsMessage("Sydney"), judgetest.JSONScoreReply("Canberra is the capital.", "2", map[string]float64{"2": 1}))
	judge.SetDefault(judgetest.JSONScoreReply("Correct.", "9", map[string]float64{"9": 1}))

	dir, _ := os.MkdirTemp("", "anvil-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(`version: 1
judges:
  default: {base_url: "`+url+`", model: m, api_key_env: EXAMPLE_KEY, supports_logprobs: true, supports_json_schema: true}
metrics:
  - name: correctness
    kind: geval
    threshold: 0.6
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`), 0o644)

	cfg, err := host.LoadConfig(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		panic(err)
	}
	cases := []abi.TestCase{
		{ID: "fr", Input: "Capital of France?", ActualOutput: "Paris.", ExpectedOutput: "Paris"},
		{ID: "au", Input: "Capital of Australia?", ActualOutput: "Sydney.", ExpectedOutput: "Canberra"},
	}
	res, err := host.Evaluate(context.Background(), cfg, cases, host.Options{
		Cache:  "off",
		Getenv: func(k string) string { return map[string]string{"EXAMPLE_KEY": "k"}[k] },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("verdict:", res.Summary.Verdict)
	for _, f := range res.Failures() {
		fmt.Println(f)
	}
	// Output:
	// verdict: failed
	// case "au", metric correctness: failed (score 0.200, threshold 0.60): Canberra is the capital.
}
