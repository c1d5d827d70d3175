package judge

import (
	"math"

	"context"
	"fmt"
	"github.com/agentanvil/anvil/abi"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/host/judgetest"
)

// BenchmarkJudgeDo measures the judge's own CPU and allocations per call
// against the fake server at zero latency (the server's work is included:
// it runs in the same process).
func BenchmarkJudgeDo(b *testing.B) {
	req := scoredRequest()
	reply := judgetest.JSONScoreReply("The answer is correct and complete.", "8", map[string]float64{"8": 0.7, "9": 0.2, "7": 0.1})
	cfg := func(url string) Config {
		c := testConfig(url)
		c.SupportsLogprobs, c.SupportsJSONSchema = true, true
		c.Price = Price{InputPerMillion: 0.15, OutputPerMillion: 0.6}
		return c
	}

	b.Run("upstream", func(b *testing.B) {
		srv := judgetest.New(b, judgetest.WithoutRecording(), judgetest.WithDefault(reply))
		j, err := New(cfg(srv.URL()), WithAPIKey(testKey))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cputime.Report(b)
		for b.Loop() {
			if resp := j.Do(context.Background(), req); resp.Error != nil {
				b.Fatal(resp.Error)
			}
		}
	})

	// A G-Eval scoring call as bench/run.sh makes it: a reason and a score
	// under a schema, 20 alternatives on every reply token; with the tokens
	// asked for (as plugins/geval asks) and with the score only.
	padded := paddedReply(reply, 20)
	for _, tc := range []struct {
		name string
		top  int
	}{{"upstream_20alts_tokens", 20}, {"upstream_20alts_score", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := judgetest.New(b, judgetest.WithoutRecording(), judgetest.WithDefault(padded))
			j, err := New(cfg(srv.URL()), WithAPIKey(testKey))
			if err != nil {
				b.Fatal(err)
			}
			r := scoredRequest()
			r.TopLogprobs = tc.top
			b.ReportAllocs()
			cputime.Report(b)
			for b.Loop() {
				if resp := j.Do(context.Background(), r); resp.Error != nil || resp.Score == nil || resp.Score.Mode != "weighted" {
					b.Fatalf("%+v", resp)
				}
			}
		})
	}

	b.Run("cache_hit", func(b *testing.B) {
		srv := judgetest.New(b, judgetest.WithoutRecording(), judgetest.WithDefault(reply))
		j, err := New(cfg(srv.URL()), WithAPIKey(testKey), WithCache(openStore(b), CacheReadWrite))
		if err != nil {
			b.Fatal(err)
		}
		if resp := j.Do(context.Background(), req); resp.Error != nil {
			b.Fatal(resp.Error)
		}
		b.ReportAllocs()
		for b.Loop() {
			resp := j.Do(context.Background(), req)
			if resp.Error != nil || !resp.Usage.CacheHit {
				b.Fatalf("not a cache hit: %+v", resp)
			}
		}
		if srv.Calls() != 1 {
			b.Fatalf("server calls = %d; want 1", srv.Calls())
		}
	})

	b.Run("upstream_parallel", func(b *testing.B) {
		srv := judgetest.New(b, judgetest.WithoutRecording(), judgetest.WithDefault(reply))
		c := cfg(srv.URL())
		c.MaxConcurrency = 32
		j, err := New(c, WithAPIKey(testKey))
		if err != nil {
			b.Fatal(err)
		}
		var worker atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			// One request per goroutine: identical concurrent requests
			// would be merged by singleflight and measure less work.
			own := scoredRequest()
			own.Messages[1].Content += fmt.Sprintf(" (worker %d)", worker.Add(1))
			for pb.Next() {
				if resp := j.Do(context.Background(), own); resp.Error != nil {
					b.Fatal(resp.Error)
				}
			}
		})
	})
}

// paddedReply gives every token of r up to n alternatives, the extra ones
// improbable and not numeric, as bench/cmd/fakejudge pads its replies.
func paddedReply(r judgetest.Reply, n int) judgetest.Reply {
	toks := make([]abi.TokenLogprob, len(r.Logprobs))
	for i, t := range r.Logprobs {
		t.Top = append([]abi.TopLogprob(nil), t.Top...)
		for k := 0; len(t.Top) < n; k++ {
			t.Top = append(t.Top, abi.TopLogprob{Token: fmt.Sprintf(" alt%c%c", 'a'+k%26, 'a'+k/26), Logprob: math.Log(1e-4) - 0.25*float64(k)})
		}
		toks[i] = t
	}
	r.Logprobs = toks
	return r
}
