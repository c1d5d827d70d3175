package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/judgetest"
)

// With samples: 3 the binary node answers true, true, false on each
// case's three walks (a known split): every case records, per node, the
// verdicts its walks gave and, per leaf, how often it fired; the summary
// counts the cases whose path differs and each node's verdicts.
func TestDAGSamplesPerNode(t *testing.T) {
	srv := judgetest.New(t)
	// Each case's task output differs, so each case's binary requests are
	// their own and PerRequest splits each case's three walks.
	srv.On(judgetest.ContainsMessage("List every claim"), judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		if strings.Contains(r.LastMessage(), "a year") {
			return judgetest.Reply{Content: `{"output": "C1: refunds accepted for a year"}`}
		}
		return judgetest.Reply{Content: `{"output": "C1: refund window is 30 days"}`}
	}))
	srv.On(judgetest.ContainsMessage("Are the claims supported"), judgetest.PerRequest(
		judgetest.Reply{Content: `{"reason": "Supported.", "verdict": true}`},
		judgetest.Reply{Content: `{"reason": "Supported.", "verdict": true}`},
		judgetest.Reply{Content: `{"reason": "Not in the context.", "verdict": false}`},
	))
	srv.On(judgetest.ContainsMessage("What is the register"), judgetest.Reply{Content: `{"reason": "Precise.", "verdict": "formal"}`})

	e := newEnv(t, configFor(srv.URL(), true, addSamples(sharedNodeDAG, 3)))
	writeFiles(t, e.dir, map[string]string{"cases.jsonl": dagCases})
	s := e.run(t, "off", engine.RunOptions{})

	for _, id := range []string{"grounded", "ungrounded"} {
		mr := readResults(t, e.out)[id].Metrics[0]
		ds := mr.DAGSpread
		if ds == nil {
			t.Fatalf("%s: no dag_spread", id)
		}
		if ds.Scorings != 3 || ds.Paths != 2 || !ds.PathDiffers {
			t.Errorf("%s: scorings %d paths %d differs %v; want 3 walks on 2 paths", id, ds.Scorings, ds.Paths, ds.PathDiffers)
		}
		got := fmt.Sprint(ds.Nodes)
		want := "[{extract 3 0 [] false} {grounded 3 0 [{false 1} {true 2}] true} {tone 2 0 [{formal 2}] false}]"
		if got != want {
			t.Errorf("%s: nodes %s; want %s", id, got, want)
		}
		if got := fmt.Sprint(ds.Leaves); got != "[{grounded false 1 0.1 0} {tone formal 2 1 0}]" {
			t.Errorf("%s: leaves %s; want grounded=false once (0.1), tone=formal twice (1)", id, got)
		}
		// Walks score 1, 1, 0.1: mean 0.7.
		if mr.Score == nil || !near(*mr.Score, 0.7) {
			t.Errorf("%s: score %v; want 0.7", id, mr.Score)
		}
	}
	ds := s.Metrics[0].DAGSamples
	if ds == nil {
		t.Fatal("summary: no dag_samples")
	}
	if ds.Cases != 2 || ds.PathDiffers != 2 || ds.PathDifferShare != 1 || !sameSet(ds.PathDifferCases, "grounded", "ungrounded") {
		t.Errorf("summary dag_samples %+v; want both cases with differing paths", ds)
	}
	if got := fmt.Sprint(ds.Nodes); got != "[{extract 2 0 []} {grounded 2 2 [{false 2} {true 4}]} {tone 2 0 [{formal 4}]}]" {
		t.Errorf("summary nodes %s", got)
	}
}

func sameSet(got []string, want ...string) bool {
	got = slices.Clone(got)
	slices.Sort(got)
	return slices.Equal(got, want)
}
