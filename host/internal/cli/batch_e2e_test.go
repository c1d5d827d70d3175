package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// batchJudge is the quickstart's judge on srv, priced (for the estimate).
func batchJudgeYAML(srv *judgetest.Server) string {
	return "    base_url: " + srv.URL() + "\n    model: gpt-4o-mini\n    api_key_env: GW_OPENAI_KEY\n" +
		"    supports_logprobs: true\n    supports_json_schema: true\n" +
		"    price: {input_per_million: 2.5, output_per_million: 10}\n"
}

// TestBatchRunE2E: the quickstart with --batch through the fake Batch
// API (OpenAI's, Azure OpenAI's on a resource, Anthropic's message
// batches) scores every case as a live run does; its scoring calls went in
// batches (lines the server answered in a batch carry no HTTP headers),
// the G-Eval steps live, first; and the run is priced at the batch price.
func TestBatchRunE2E(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server []judgetest.Option
		judge  func(*judgetest.Server) string
		keyEnv string
		// ended is the status of a batch that has ended.
		ended string
	}{
		{"openai", nil, batchJudgeYAML, "GW_OPENAI_KEY", "completed"},
		{"azure", []judgetest.Option{judgetest.Azure("quickstart-4o", "2024-10-21")}, func(srv *judgetest.Server) string {
			return "    provider: azure\n    base_url: " + srv.URL() + "\n    deployment: quickstart-4o\n    api_version: \"2024-10-21\"\n" +
				"    model: gpt-4o-mini\n    supports_logprobs: true\n    supports_json_schema: true\n" +
				"    price: {input_per_million: 2.5, output_per_million: 10}\n"
		}, "AZURE_OPENAI_API_KEY", "completed"},
		{"anthropic", []judgetest.Option{judgetest.Anthropic()}, func(srv *judgetest.Server) string {
			return "    provider: anthropic\n    base_url: " + srv.URL() + "\n    model: claude-sonnet-4-5\n    max_tokens: 1024\n" +
				"    price: {input_per_million: 3, output_per_million: 15}\n"
		}, "ANTHROPIC_API_KEY", "ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t, append(tc.server, judgetest.WithAPIKey(canaryKey))...)
			geval(srv)
			dir := providerQuickstart(t, tc.judge(srv))
			env := []string{tc.keyEnv + "=" + canaryKey}
			r := runBinary(t, dir, env, "run", "-c", "anvil.yaml", "-o", "out", "--no-progress", "--cache", "off",
				"--batch", "--batch-poll", "1ms", "--batch-flush", "100ms")
			if r.code != exitOK {
				t.Fatalf("quickstart --batch: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			s := readSummary(t, filepath.Join(dir, "out", "summary.json"))
			if c := metricOf(t, s, "correctness"); c.Scored != 12 {
				t.Errorf("correctness = %+v", c)
			}
			if srv.BatchCreates() == 0 {
				t.Fatal("no batch was created")
			}
			lines, live := 0, 0
			for _, b := range srv.Batches() {
				lines += len(b.CustomIDs)
				if b.Status != tc.ended {
					t.Errorf("batch %s %s", b.ID, b.Status)
				}
			}
			for _, req := range srv.Requests() {
				if len(req.Header) > 0 {
					live++
					if !strings.Contains(req.LastMessage(), `"steps"`) {
						t.Errorf("a live call that is not G-Eval's steps: %.200s", req.LastMessage())
					}
				}
			}
			if lines < 12 || live == 0 {
				t.Errorf("%d batch lines, %d live calls; want ≥ 12 lines and the steps live", lines, live)
			}
			assertNoCanary(t, dir, "out", r)

			// The same run live, for the price: the batch run cost half of it,
			// less the live steps.
			creates := srv.BatchCreates()
			srv.Reset()
			geval(srv)
			r = runBinary(t, dir, env, "run", "-c", "anvil.yaml", "-o", "live", "--no-progress", "--cache", "off")
			if r.code != exitOK {
				t.Fatalf("live run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			liveSum := readSummary(t, filepath.Join(dir, "live", "summary.json"))
			if s.Judge.USD <= 0 || s.Judge.USD >= liveSum.Judge.USD*0.75 || s.Judge.USD <= liveSum.Judge.USD*0.4 {
				t.Errorf("batch run $%v, live run $%v: want about half", s.Judge.USD, liveSum.Judge.USD)
			}
			if n := srv.BatchCreates() - creates; n != 0 {
				t.Errorf("the live run created %d batches", n)
			}
		})
	}
}

// TestEstimateShowsBatchPrice: estimate prints the live and the batch
// price, the batch one half the cases' calls plus the steps at full price.
func TestEstimateShowsBatchPrice(t *testing.T) {
	srv := judgetest.New(t)
	dir := providerQuickstart(t, batchJudgeYAML(srv))
	r := runBinary(t, dir, nil, "estimate", "-c", "anvil.yaml", "--cache", "off")
	if r.code != exitOK {
		t.Fatalf("estimate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "BATCH USD") {
		t.Fatalf("no batch price column:\n%s", r.stdout)
	}
	var usd, batch float64
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "total" {
			continue
		}
		for i, v := range f {
			if strings.HasPrefix(v, "$") && usd == 0 {
				usd, _ = strconv.ParseFloat(v[1:], 64)
				batch, _ = strconv.ParseFloat(strings.TrimPrefix(f[i+1], "$"), 64)
				break
			}
		}
	}
	if usd <= 0 || batch >= usd || batch < usd/2 {
		t.Errorf("total usd %v, batch usd %v: want usd/2 ≤ batch < usd\n%s", usd, batch, r.stdout)
	}
}
