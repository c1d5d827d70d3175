package main

import (
	"fmt"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The script as the package comment states it: the cheap judge writes the
// strong judge's score on every clear case it is not set to be wrong on,
// and on a hard case one within one of it.
func TestScriptedJudges(t *testing.T) {
	cheap, strong := scripted(false, 0), scripted(true, 0)
	hard := 0
	for i := range 1000 {
		req := judgetest.RecordedRequest{Messages: []abi.Message{{Role: "user", Content: fmt.Sprintf("Question case-%05d?", i)}}}
		c, s := cheap(req).Content, strong(req).Content
		var cs, ss int
		fmt.Sscanf(c[len(`{"reason": "Scripted.", "score": `):], "%d", &cs)
		fmt.Sscanf(s[len(`{"reason": "Scripted.", "score": `):], "%d", &ss)
		switch {
		case ss <= 3 || ss >= 7:
			if cs != ss {
				t.Fatalf("case %d: clear (strong %d), cheap wrote %d", i, ss, cs)
			}
		default:
			hard++
			if cs < ss-1 || cs > ss+1 {
				t.Fatalf("case %d: hard (strong %d), cheap wrote %d", i, ss, cs)
			}
		}
	}
	if hard < 200 || hard > 350 {
		t.Errorf("%d hard cases of 1000; want about 3/11", hard)
	}
}
