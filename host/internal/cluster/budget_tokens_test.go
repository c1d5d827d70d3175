package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/internal/testkit"
)

// requestTokens is what a chat completion request costs against a
// tokens-per-minute limit before it is answered, counted as providers
// count it (OpenAI: the prompt's estimated tokens plus the reply cap the
// request carries): characters/4 of each message with 4 tokens of framing
// and 3 for the reply's, characters/4 of the response_format schema, and
// max_tokens. The judge's limiter charges the same before each call — its
// estimate of the input plus the reply cap — where the schema's share also
// counts the instruction that goes with it, so what the judge sees is at
// most what was charged. Nothing is settled after the reply: the cap is
// the charge.
func requestTokens(body []byte) int {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens      int `json:"max_tokens"`
		MaxCompletion  int `json:"max_completion_tokens"`
		ResponseFormat struct {
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return 0
	}
	n := max(req.MaxTokens, req.MaxCompletion) + 3 + (len(req.ResponseFormat.JSONSchema.Schema)+3)/4
	for _, m := range req.Messages {
		n += 4 + (len(m.Content)+3)/4
	}
	return n
}

// tokenBucketExcess is the most tokens that arrived within any span of
// arrivals beyond what perSecond refills over that span: max over i ≤ j
// of tokens[i..j] − perSecond·(arrival j − arrival i). A token bucket of
// that rate admits at most its burst here, whatever the span.
func (mj *meteredJudge) tokenBucketExcess(perSecond float64) (excess float64, total int) {
	mj.mu.Lock()
	defer mj.mu.Unlock()
	for i := range mj.arrivals {
		sum := 0
		for j := i; j < len(mj.arrivals); j++ {
			sum += mj.tokens[j]
			excess = max(excess, float64(sum)-perSecond*mj.arrivals[j].Sub(mj.arrivals[i]).Seconds())
		}
		total += mj.tokens[i]
	}
	return excess, total
}

// TestTokensPerMinuteAcrossWorkers: three workers that could each keep 8
// calls in flight hold together to the judge's tokens_per_minute, as
// counted at the judge from the requests themselves. The limit binds
// alone: max_concurrency is above what the workers can keep in flight
// and requests_per_minute is unlimited.
//
// The judge's token bucket starts full with a minute's allowance (its
// documented burst), so a run of a few seconds checks what it can: the
// calls carry the burst plus over three seconds' allowance, and in any
// span of arrivals the judge sees at most burst + rate·span tokens, with
// half a second's allowance of slack for arrival jitter on a loaded
// machine. The whole run is one such span: it must last over 3 s. With
// three workers each pacing itself, all of them fit in three full buckets
// and arrive within a fraction of a second.
func TestTokensPerMinuteAcrossWorkers(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	const (
		cases     = 60
		maxTokens = 4000
		// tokensPerMinute is set so that the 61 calls (each charged
		// maxTokens plus about 390 of prompt) come to a minute's
		// allowance plus three and a half seconds' (4200 a second).
		tokensPerMinute = 252000
		perSecond       = tokensPerMinute / 60.0
		jitter          = 500 * time.Millisecond
	)
	judge := deterministicJudge(t)
	mj := newMeteredJudge(t, judge, 25*time.Millisecond)
	dir := project(t, mj.url, cases, false)
	cfgPath := filepath.Join(dir, "anvil.yaml")
	b, _ := os.ReadFile(cfgPath)
	limited := strings.Replace(string(b), "    price:", fmt.Sprintf(
		"    max_concurrency: 32\n    max_tokens: %d\n    tokens_per_minute: %d\n    price:", maxTokens, tokensPerMinute), 1)
	if err := os.WriteFile(cfgPath, []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 3, WorkerOptions{Concurrency: 8})
	s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != cases || s.Judge.Calls != cases+1 {
		t.Fatalf("%d cases, %d judge calls; want %d and %d", s.Cases, s.Judge.Calls, cases, cases+1)
	}
	excess, total := mj.tokenBucketExcess(perSecond)
	t.Logf("the judge saw %d calls carrying %d tokens over %v; most beyond the refill in any span: %.0f (burst %d)",
		cases+1, total, mj.span(), excess, tokensPerMinute)
	if burstAndMore := float64(total - tokensPerMinute); burstAndMore < 3*perSecond {
		t.Fatalf("the calls carried %d tokens, only %.1f s beyond the burst of %d: the test checks nothing", total, burstAndMore/perSecond, tokensPerMinute)
	}
	if allowed := tokensPerMinute + perSecond*jitter.Seconds(); excess > allowed {
		t.Errorf("the judge saw %.0f tokens more in one span of arrivals than tokens_per_minute %d refills over it; "+
			"its burst is %d (with jitter, %.0f)", excess, tokensPerMinute, tokensPerMinute, allowed)
	}
}
