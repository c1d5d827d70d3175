package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
)

// JudgeOne sends a single judge request. Every fault — the batch refused
// (capability, budget) or the request failed — comes back as the host's
// *abi.Error, so its code (judge_error, budget_exhausted, …) survives when
// the kind returns it.
func JudgeOne(ctx context.Context, h Host, req abi.JudgeRequest) (*abi.JudgeResponse, *abi.Error) {
	resps, err := h.Judge(ctx, []abi.JudgeRequest{req})
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, abi.Errorf(abi.CodeJudge, "%v", err)
	}
	if len(resps) != 1 {
		return nil, abi.Errorf(abi.CodeJudge, "host answered %d responses to 1 judge request", len(resps))
	}
	if resps[0].Error != nil {
		return nil, resps[0].Error
	}
	return &resps[0], nil
}

// AttrMap turns slog-style key/value pairs (or slog.Attr values) into the
// attribute map of an abi.LogRecord.
func AttrMap(kv ...any) map[string]any {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i++ {
		switch k := kv[i].(type) {
		case slog.Attr:
			m[k.Key] = k.Value.Any()
		case string:
			if i+1 < len(kv) {
				m[k] = kv[i+1]
				i++
			} else {
				m["!BADKEY"] = k
			}
		default:
			m[fmt.Sprintf("!BADKEY%d", i)] = k
		}
	}
	return m
}

// LevelName maps a slog level to the four levels of abi.LogRecord:
// anything between two standard levels rounds down to the lower one.
func LevelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warn"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}
