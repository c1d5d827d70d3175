package engine

import (
	"context"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/judgetest"
)

func groupJudge(t *testing.T) (*judge.Judge, *judgetest.Server) {
	t.Helper()
	srv := judgetest.New(t)
	srv.SetDefault(judgetest.Reply{Content: "ok"})
	j, err := judge.New(judge.Config{Name: "j", Model: "m", BaseURL: srv.URL(), SupportsN: true}, judge.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	return j, srv
}

func ask(text string) []abi.JudgeRequest {
	return []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: text}}}}
}

// A sample that never asks does not hold the others' requests past the
// window: they go out on their own.
func TestSampleGroupWindowSendsWhatWaits(t *testing.T) {
	j, srv := groupJudge(t)
	g := newSampleGroup(j, nil, 2, 20*time.Millisecond)
	got := g.ask(context.Background(), 0, ask("q"))
	if got[0].Error != nil || got[0].Content != "ok" || srv.Calls() != 1 {
		t.Fatalf("reply %+v after %d calls; want the one sample answered alone", got[0], srv.Calls())
	}
}

// Samples that ask different things are answered apart; alike requests of
// distinct samples go out as one call with n; a finished sample no longer
// holds the rest.
func TestSampleGroupGroupsAlikeRequests(t *testing.T) {
	j, srv := groupJudge(t)
	g := newSampleGroup(j, nil, 3, time.Hour)
	done := make(chan []abi.JudgeResponse, 2)
	go func() { done <- g.ask(context.Background(), 0, ask("same")) }()
	go func() { done <- g.ask(context.Background(), 1, ask("same")) }()
	// Sample 2 finishes without asking: the two waiting go out together.
	g.done()
	for range 2 {
		if r := <-done; r[0].Error != nil || r[0].Content != "ok" {
			t.Fatalf("reply %+v", r[0])
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].N != 2 {
		t.Fatalf("%d requests (%+v); want one with n=2", len(reqs), reqs)
	}
	g2 := newSampleGroup(j, nil, 2, time.Hour)
	go func() { done <- g2.ask(context.Background(), 0, ask("first")) }()
	if r := g2.ask(context.Background(), 1, ask("second")); r[0].Error != nil {
		t.Fatal(r[0].Error)
	}
	<-done
	if srv.Calls() != 3 {
		t.Errorf("%d calls; want 2 more for two different requests", srv.Calls())
	}
}

// A cancelled sample stops waiting.
func TestSampleGroupAskCancelled(t *testing.T) {
	j, _ := groupJudge(t)
	g := newSampleGroup(j, nil, 2, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := g.ask(ctx, 0, ask("q")); r[0].Error == nil {
		t.Error("a cancelled ask returned no error")
	}
}
