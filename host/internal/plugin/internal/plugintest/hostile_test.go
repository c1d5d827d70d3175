package plugintest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// services is the method set of a transport's Services, which this
// package cannot import.
type services interface {
	Judge(context.Context, []abi.JudgeRequest) []abi.JudgeResponse
}

// fatalTB records a Fatalf and ends the goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestHold: a call that reaches the judge is held there until Release; a
// call that ends first fails the test at once instead of hanging it.
func TestHold(t *testing.T) {
	judging := func(ctx context.Context, svc services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
		svc.Judge(ctx, []abi.JudgeRequest{{}})
		return &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeBudget}}, nil
	}
	svc, done := Hold(t, context.Background(), judging, "held", 1)
	select {
	case err := <-done:
		t.Fatalf("the call ended while held: %v", err)
	default:
	}
	close(svc.Release)
	var ae *abi.Error
	if err := <-done; !errors.As(err, &ae) || ae.Code != abi.CodeBudget {
		t.Errorf("done took %v, want the result's error", err)
	}

	failing := func(context.Context, services, *abi.MeasureRequest) (*abi.MeasureResult, error) {
		return nil, errors.New("refused")
	}
	ftb := &fatalTB{TB: t}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		Hold(ftb, context.Background(), failing, "early", 1)
	}()
	<-ended
	if !strings.Contains(ftb.msg, "call early ended without reaching the judge: refused") {
		t.Errorf("Hold failed with %q", ftb.msg)
	}
}
