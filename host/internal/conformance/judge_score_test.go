package conformance

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// TestScriptedJudgeScoresWithoutASchema: a judge request that asks the
// host for a score but the judge for plain text (the ABI allows it) gets a
// reply the host finds the score in, in the request's range.
func TestScriptedJudgeScoresWithoutASchema(t *testing.T) {
	j, err := StartScriptedJudge()
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	s := &services{judge: j}
	for _, sp := range []abi.ScoreSpec{{Min: 1, Max: 5}, {Min: 0, Max: 10}, {Min: 2, Max: 3}} {
		out := s.Judge(context.Background(), []abi.JudgeRequest{{
			Messages: []abi.Message{{Role: "user", Content: "Rate it."}},
			Score:    &sp,
		}})
		r := out[0]
		if r.Error != nil || r.Score == nil {
			t.Fatalf("score %d–%d without a schema: %+v", sp.Min, sp.Max, r)
		}
		if want := sp.Min + (sp.Max-sp.Min)/2; r.Score.Raw != want {
			t.Errorf("score %d–%d: raw %d, want %d", sp.Min, sp.Max, r.Score.Raw, want)
		}
	}
}
