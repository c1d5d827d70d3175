package wasm

import (
	"context"
	"errors"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestDeadlineWhileStartingIsATimeout: an instance that cannot start
// because the call's deadline passed is a timeout, not a trap — the module
// is not at fault (found by the conformance kit's after-timeout check).
func TestDeadlineWhileStartingIsATimeout(t *testing.T) {
	w := load(t, "textcheck", transport.Options{}).(*wasmPlugin)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in, err := w.pool.newInst(ctx)
	if in != nil {
		in.close(context.Background())
	}
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeTimeout {
		t.Fatalf("starting an instance after the deadline: %v, want a timeout", err)
	}
	// And with a live context the same factory starts an instance.
	in, err = w.pool.newInst(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in.close(context.Background())
}
