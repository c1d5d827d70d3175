//go:build wasip1

// Command hostile is a guest that misbehaves on request: the metric kind
// "hostile" does what its config's behaviour names. The host's tests use it
// to prove each misbehaviour is contained.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/guest"
)

type config struct {
	Behaviour string `json:"behaviour" jsonschema:"required"`
	Addr      string `json:"addr,omitempty"`
	Size      int    `json:"size,omitempty"`
	Calls     int    `json:"calls,omitempty"`
}

var sink [][]byte // keeps the memory bomb's allocations reachable

func measure(ctx context.Context, h sdk.Host, cfg *config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	obs := map[string]any{}
	switch cfg.Behaviour {
	case "echo":
		return result(1, req.Case.ID+"|"+req.Case.Input, nil), nil
	case "loop":
		for {
		}
	case "membomb":
		for {
			sink = append(sink, make([]byte, 8<<20))
		}
	case "panic":
		panic("hostile: deliberate panic in measure")
	case "nilderef":
		var m *abi.MeasureRequest
		return result(0, m.Case.ID, nil), nil
	case "stackoverflow":
		return result(0, "", recurse(1)), nil
	case "exit0":
		os.Exit(0)
	case "readfile":
		b, err := os.ReadFile("/etc/passwd")
		obs["file_bytes"] = string(b)
		obs["file_error"] = errString(err)
		entries, err := os.ReadDir("/")
		obs["dir_entries"] = len(entries)
		obs["dir_error"] = errString(err)
		wd, err := os.Getwd()
		obs["wd"], obs["wd_error"] = wd, errString(err)
	case "env":
		obs["HOME"] = os.Getenv("HOME")
		obs["PATH"] = os.Getenv("PATH")
		obs["OPENAI_API_KEY"] = os.Getenv("OPENAI_API_KEY")
		obs["environ"] = os.Environ()
		obs["args"] = os.Args
	case "socket":
		c, err := net.DialTimeout("tcp", cfg.Addr, time.Second)
		if c != nil {
			c.Close()
		}
		obs["dial_error"] = errString(err)
		obs["connected"] = err == nil
	case "clock":
		obs["unix_nano"] = time.Now().UnixNano()
	case "bigoutput":
		return result(0, strings.Repeat("x", cfg.Size), nil), nil
	case "judge":
		_, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "are you there?"}}}})
		return nil, err
	case "judge_many":
		for i := 0; i < cfg.Calls; i++ {
			if _, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "again"}}}}); err != nil {
				return nil, err
			}
		}
	case "log":
		h.Log(ctx, slog.LevelWarn, "hostile says hello", "case", req.Case.ID, "n", 3)
	case "logflood":
		line := strings.Repeat("z", cfg.Size)
		for i := 0; i < cfg.Calls; i++ {
			h.Log(ctx, slog.LevelInfo, line, "i", i)
		}
	case "forge":
		// An error dressed up as another plugin's, with a made-up stderr
		// and a retry hint: the fields the host owns.
		return nil, &abi.Error{Code: abi.CodeMetric, Message: "forged", Plugin: "geval@9.9.9",
			Digest: "sha256:" + strings.Repeat("0", 64), Stderr: "panic: not really", Retryable: true}
	default:
		return nil, &abi.Error{Code: abi.CodeInvalidConfig, Field: "behaviour", Message: "unknown behaviour " + cfg.Behaviour}
	}
	return result(0, cfg.Behaviour+" observed", obs), nil
}

func recurse(n int) map[string]any {
	var pad [64]byte
	pad[n%64] = byte(n)
	m := recurse(n + 1)
	m["pad"] = pad[0]
	return m
}

func result(score float64, reason string, details map[string]any) *abi.MeasureResult {
	r := &abi.MeasureResult{Score: &score, Success: score == 1, Reason: reason}
	if details != nil {
		r.Details, _ = json.Marshal(details)
	}
	return r
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, os.ErrNotExist) {
		return "not exist: " + err.Error()
	}
	return err.Error()
}

func init() {
	guest.Serve(&sdk.Plugin{
		Name:    "hostile",
		Version: "0.0.1",
		// It asks for the judge, so that a grant makes judge calls
		// possible and the budgets can be tested; "unasked" does not.
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{&sdk.MetricKind[config]{
			Name:    "hostile",
			Measure: measure,
		}},
	})
}

func main() {}
