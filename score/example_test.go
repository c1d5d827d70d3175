package score_test

import (
	"fmt"
	"math"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/score"
)

// A judge replied {"reason": "...", "score": 10} with a tokenizer that
// writes 10 as "1" then "0". The 10 is weighted through both positions: the
// "1" alternatives and, along the path actually taken, what followed "1".
func ExampleFromTokens() {
	lp := math.Log
	tokens := []abi.TokenLogprob{
		{Token: `{"reason": "all 3 steps met", "score": `},
		{Token: "1", Logprob: lp(.6), Top: []abi.TopLogprob{
			{Token: "1", Logprob: lp(.6)}, {Token: "9", Logprob: lp(.3)}, {Token: "8", Logprob: lp(.1)},
		}},
		{Token: "0", Logprob: lp(.8), Top: []abi.TopLogprob{
			{Token: "0", Logprob: lp(.8)}, {Token: "}", Logprob: lp(.15)}, {Token: "5", Logprob: lp(.05)},
		}},
		{Token: "}"},
	}
	raw := 10
	res, err := score.FromTokens(`{"reason": "all 3 steps met", "score": 10}`, tokens,
		abi.ScoreSpec{Min: 0, Max: 10}, &raw)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s raw=%d value=%.4f\n", res.Mode, res.Raw, res.Value)
	for _, c := range res.Candidates {
		fmt.Printf("  %2d  p=%.2f\n", c.Value, c.Probability)
	}
	norm, _ := score.Normalize(res.Value, 0, 10)
	fmt.Printf("normalised %.4f\n", norm)
	// Output:
	// weighted raw=10 value=8.6495
	//    1  p=0.09
	//    8  p=0.10
	//    9  p=0.30
	//   10  p=0.48
	// normalised 0.8649
}

// Without logprobs the raw score is used, and the result says why.
func ExampleFromTokens_noLogprobs() {
	res, _ := score.FromTokens(`{"score": 7, "reason": "step 2 is missing"}`, nil, abi.ScoreSpec{Min: 1, Max: 10}, nil)
	fmt.Printf("%s %.0f (%s)\n", res.Mode, res.Value, res.Cause)
	// Output: raw 7 (no logprobs returned)
}
