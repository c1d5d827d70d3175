// Package hosted runs the first-party kinds end to end for their tests:
// the host (config, engine, judge client, the OpenAI wire) evaluating
// cases against a host/judgetest server, which the test scripts. It links
// the host (SQLite included), which does not build for wasip1: only test
// files built for other targets (//go:build !wasip1) import it.
package hosted

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

// Reply is a judge reply whose content is v as JSON.
func Reply(v any) judgetest.Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return judgetest.Reply{Content: string(b)}
}

// keyEnv names the judge's API key, which Evaluate's Getenv alone knows.
const keyEnv = "E2E_KEY"

// Evaluate evaluates cases with the metrics (anvil.yaml's list items,
// "  - {name: ..., kind: ...}" lines) judged by srv, a judge with
// structured outputs, with the cache off, and fails t if the run does not
// complete.
func Evaluate(t *testing.T, srv *judgetest.Server, metrics string, cases ...abi.TestCase) *host.Result {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "anvil.yaml")
	cfg := `version: 1
judges:
  default: {base_url: "` + srv.URL() + `", model: m, api_key_env: ` + keyEnv + `, supports_json_schema: true}
metrics:
` + metrics
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := host.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := host.Evaluate(t.Context(), c, cases, host.Options{Cache: "off", Getenv: func(k string) string {
		if k == keyEnv {
			return "k"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
