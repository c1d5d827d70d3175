package judge

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// memState is a BatchState in memory, shared by the judges of one test
// as the store is shared by a run and its resumption.
type memState struct {
	mu sync.Mutex
	m  map[string][]byte
	// puts, when set, receives each key put.
	puts chan string
}

func (s *memState) Get(_ context.Context, ns, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[ns+"\x00"+key]
	return v, ok, nil
}

func (s *memState) Put(_ context.Context, ns, key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[ns+"\x00"+key] = v
	if s.puts != nil {
		s.puts <- key
	}
	return nil
}

// batchFlavour is a provider whose batch API the judge speaks: the fake
// server of it and the judge's configuration for that server.
type batchFlavour struct {
	name   string
	server func(t *testing.T) *judgetest.Server
	config func(url string) func(*Config)
	// ended is the status of a batch that has ended.
	ended string
}

// batchFlavours are the providers batch mode is tested against.
var batchFlavours = []batchFlavour{
	{"openai", func(t *testing.T) *judgetest.Server { return judgetest.New(t) }, nil, "completed"},
	{"azure", func(t *testing.T) *judgetest.Server {
		return judgetest.New(t, judgetest.Azure("prod-gpt-4o", "2024-10-21"), judgetest.WithAPIKey(testKey))
	}, azureConfig, "completed"},
	{"anthropic", func(t *testing.T) *judgetest.Server {
		return judgetest.New(t, judgetest.Anthropic(), judgetest.WithAPIKey(testKey))
	}, func(string) func(*Config) {
		return func(c *Config) {
			c.Provider = "anthropic"
			c.Model = "claude-sonnet-4-5"
			c.APIKeyEnv = "ANTHROPIC_API_KEY"
		}
	}, "ended"},
}

// batchJudge is a judge in batch mode on OpenAI's fake srv (batchJudgeOn).
func batchJudge(t *testing.T, srv *judgetest.Server, n int, state BatchState, retryLive bool) *harness {
	t.Helper()
	return batchJudgeOn(t, batchFlavours[0], srv, n, state, retryLive)
}

// batchJudgeOn is a judge in batch mode on fl's fake srv that flushes at
// n requests (never on time) and polls without waiting (fake clock).
func batchJudgeOn(t *testing.T, fl batchFlavour, srv *judgetest.Server, n int, state BatchState, retryLive bool) *harness {
	t.Helper()
	return newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		if fl.config != nil {
			fl.config(srv.URL())(c)
		}
		c.Price = Price{InputPerMillion: 1e6, OutputPerMillion: 1e6} // 1 USD a token
		c.MaxRetries = 2
	}, WithBatch(BatchOptions{State: state, MaxRequests: n, FlushAfter: time.Hour, PollEvery: time.Millisecond, RetryLive: retryLive}))
}

// doAll makes the requests concurrently in a batching context.
func doAll(ctx context.Context, j *Judge, prompts []string) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() { out[i] = j.Do(WithBatching(ctx), userRequest(p)) })
	}
	wg.Wait()
	return out
}

func prompts(n int) []string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("grade answer %d", i))
	}
	return ps
}

// createdCh reports each batch the server creates.
func createdCh(srv *judgetest.Server) chan string {
	ch := make(chan string, 16)
	srv.OnBatchCreate(func(id string) { ch <- id })
	return ch
}

func TestBatchAnswersThroughOneBatch(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			h := batchJudgeOn(t, fl, srv, 3, nil, false)
			resps := doAll(context.Background(), h.judge, prompts(3))
			for _, r := range resps {
				mustOK(t, r)
				if r.Content != judgetest.DefaultContent || r.Usage.Calls != 1 || r.Usage.Attempts != 1 {
					t.Errorf("content %q, usage %+v", r.Content, r.Usage)
				}
				// The batch price: half the live price of the same tokens.
				if want := h.judge.Price(r.Usage.InputTokens, r.Usage.OutputTokens) / 2; math.Abs(r.Usage.USD-want) > 1e-9 {
					t.Errorf("usd %v; want the batch price %v", r.Usage.USD, want)
				}
			}
			if n := srv.BatchCreates(); n != 1 {
				t.Errorf("%d batches created; want 1", n)
			}
			b := srv.Batches()
			if len(b) != 1 || len(b[0].CustomIDs) != 3 || b[0].Status != fl.ended {
				t.Errorf("batches %+v", b)
			}
			// Samples of one request have the same body: distinct lines, each
			// with its own reply.
			out := make([]abi.JudgeResponse, 3)
			var wg sync.WaitGroup
			for i := range out {
				wg.Go(func() { out[i] = h.judge.DoSample(WithBatching(context.Background()), userRequest("same"), i) })
			}
			wg.Wait()
			for _, r := range out {
				mustOK(t, r)
			}
			if b := srv.Batches(); len(b) != 2 || len(b[1].CustomIDs) != 3 {
				t.Errorf("batches %+v", b)
			}
		})
	}
}

// A run killed between a batch's creation and its end, resumed, polls the
// batch it submitted: the server sees one create.
func TestBatchResumePollsInsteadOfResubmitting(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.SetBatchMode(judgetest.BatchManual)
			state := &memState{puts: make(chan string, 2)}
			ctx, cancel := context.WithCancel(context.Background())
			srv.OnBatchCreate(func(string) { cancel() })
			first := batchJudgeOn(t, fl, srv, 2, state, false)
			for _, r := range doAll(ctx, first.judge, prompts(2)) {
				if r.Error == nil {
					t.Fatalf("a request of the killed run was answered: %+v", r)
				}
			}
			// The killed run's callers gave up at the create; the batch is
			// recorded once the create is answered.
			<-state.puts
			<-state.puts
			state.puts = nil
			created := createdCh(srv)
			if n := srv.BatchCreates(); n != 1 {
				t.Fatalf("%d batches created; want 1", n)
			}
			id := srv.Batches()[0].ID

			second := batchJudgeOn(t, fl, srv, 2, state, false)
			done := make(chan []abi.JudgeResponse)
			go func() { done <- doAll(context.Background(), second.judge, prompts(2)) }()
			if err := srv.CompleteBatch(id); err != nil {
				t.Fatal(err)
			}
			var resps []abi.JudgeResponse
			select {
			case resps = <-done:
			case id := <-created:
				t.Fatalf("the resumed run created batch %s", id)
			}
			for _, r := range resps {
				mustOK(t, r)
			}
			if n := srv.BatchCreates(); n != 1 {
				t.Errorf("%d batches created; want 1", n)
			}
		})
	}
}

// Lines a batch failed with a retryable status, or ended without
// (expired), are sent again: in a new batch, or live.
func TestBatchPartialFailureRetried(t *testing.T) {
	for _, fl := range batchFlavours {
		for _, tc := range []struct {
			name        string
			live        bool
			wantCreates int
		}{{"in a new batch", false, 2}, {"live", true, 1}} {
			t.Run(fl.name+", "+tc.name+", server error", func(t *testing.T) {
				srv := fl.server(t)
				srv.On(judgetest.ContainsMessage("answer 1"), judgetest.Sequence(judgetest.Reply{Status: 500, ErrorMessage: "overloaded"}, judgetest.Reply{Content: "fine"}))
				h := batchJudgeOn(t, fl, srv, 3, nil, tc.live)
				resps := doAll(context.Background(), h.judge, prompts(3))
				for _, r := range resps {
					mustOK(t, r)
				}
				if resps[1].Content != "fine" || resps[1].Usage.Attempts != 2 {
					t.Errorf("retried request: content %q, usage %+v", resps[1].Content, resps[1].Usage)
				}
				if n := srv.BatchCreates(); n != tc.wantCreates {
					t.Errorf("%d batches; want %d", n, tc.wantCreates)
				}
			})
			t.Run(fl.name+", "+tc.name+", expired", func(t *testing.T) {
				srv := fl.server(t)
				srv.SetBatchMode(judgetest.BatchManual)
				created := createdCh(srv)
				h := batchJudgeOn(t, fl, srv, 3, &memState{}, tc.live)
				done := make(chan []abi.JudgeResponse)
				go func() { done <- doAll(context.Background(), h.judge, prompts(3)) }()
				if err := srv.ExpireBatch(<-created, 1); err != nil {
					t.Fatal(err)
				}
				if !tc.live {
					// The two it expired on come back as a batch of their own.
					var again string
					select {
					case again = <-created:
					case r := <-done:
						t.Fatalf("answered without a second batch: %+v", r)
					}
					if b := srv.Batches(); len(b[1].CustomIDs) != 2 {
						t.Errorf("second batch %+v", b[1])
					}
					if err := srv.CompleteBatch(again); err != nil {
						t.Fatal(err)
					}
				}
				for _, r := range <-done {
					mustOK(t, r)
				}
				if n := srv.BatchCreates(); n != tc.wantCreates {
					t.Errorf("%d batches; want %d", n, tc.wantCreates)
				}
			})
		}
	}
}

// A line the server refused (4xx) fails its request as a live call would,
// in the server's words, and is not sent again.
func TestBatchRejectedLineFails(t *testing.T) {
	for _, fl := range batchFlavours {
		t.Run(fl.name, func(t *testing.T) {
			srv := fl.server(t)
			srv.On(judgetest.ContainsMessage("answer 0"), judgetest.Reply{Status: 400, ErrorMessage: "context too long"})
			h := batchJudgeOn(t, fl, srv, 2, nil, false)
			resps := doAll(context.Background(), h.judge, prompts(2))
			wantError(t, resps[0], abi.CodeJudge, "context too long")
			mustOK(t, resps[1])
			if n := srv.BatchCreates(); n != 1 {
				t.Errorf("%d batches; want 1", n)
			}
		})
	}
}

// An Anthropic result line is a reply, a failure of the kind the live
// reply would be, or a request to send again.
func TestAnthropicBatchLineResult(t *testing.T) {
	for _, tc := range []struct {
		line      string
		wantKind  failureKind
		wantAgain bool
		wantRaw   bool
	}{
		{`{"custom_id":"a","result":{"type":"succeeded","message":{"type":"message"}}}`, 0, false, true},
		{`{"custom_id":"a","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}}}`, failRejected, false, false},
		{`{"custom_id":"a","result":{"type":"errored","error":{"type":"error","error":{"type":"overloaded_error","message":"busy"}}}}`, failServer, true, false},
		{`{"custom_id":"a","result":{"type":"errored","error":{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}}}`, failRateLimited, true, false},
		{`{"custom_id":"a","result":{"type":"errored","error":{"type":"error","error":{"type":"new_error","message":"?"}}}}`, failServer, true, false},
		{`{"custom_id":"a","result":{"type":"errored"}}`, failServer, true, false},
		{`{"custom_id":"a","result":{"type":"canceled"}}`, failServer, true, false},
		{`{"custom_id":"a","result":{"type":"expired"}}`, failServer, true, false},
		{`{"custom_id":"a","result":{"type":"other"}}`, failUnparseable, true, false},
	} {
		var l anthropicResultLine
		if err := json.Unmarshal([]byte(tc.line), &l); err != nil {
			t.Fatal(err)
		}
		r := anthropicLineResult(l)
		switch {
		case tc.wantRaw && (r.f != nil || len(r.comp.raw) == 0):
			t.Errorf("%s: %+v; want a reply", tc.line, r)
		case !tc.wantRaw && (r.f == nil || r.f.kind != tc.wantKind || r.again != tc.wantAgain):
			t.Errorf("%s: %+v; want kind %v, again %v", tc.line, r.f, tc.wantKind, tc.wantAgain)
		}
	}
}

// An Anthropic result line from the network becomes a reply or a
// failure, never a panic.
func FuzzAnthropicBatchResultLine(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a-0","result":{"type":"succeeded","message":{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}}}`))
	f.Add([]byte(`{"custom_id":"a-0","result":{"type":"errored","error":{"type":"error","error":{"type":"api_error","message":"x"}}}}`))
	f.Add([]byte(`{"custom_id":"a-0","result":{"type":"expired"}}`))
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Provider, cfg.Model, cfg.APIKeyEnv = "anthropic", "claude-sonnet-4-5", "ANTHROPIC_API_KEY"
	j, err := New(cfg, WithAPIKey(testKey))
	if err != nil {
		f.Fatal(err)
	}
	b := newBatcher(j, j.provider.(batchWire), BatchOptions{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var l anthropicResultLine
		if json.Unmarshal(raw, &l) != nil {
			return
		}
		r := b.decode(anthropicLineResult(l), 0)
		if r.f == nil && len(r.comp.choices) == 0 {
			t.Fatalf("a completion without a choice from %s", raw)
		}
	})
}

// Calls outside a batching context (prepare work) go live.
func TestBatchOnlyInBatchingContext(t *testing.T) {
	srv := judgetest.New(t)
	h := batchJudge(t, srv, 1, nil, false)
	mustOK(t, h.judge.Do(context.Background(), userRequest("steps")))
	if n := srv.BatchCreates(); n != 0 {
		t.Errorf("%d batches for a live call", n)
	}
}

// A result line from the network becomes a completion or a failure, never
// a panic; a 2xx line's body is decoded as a live reply is.
func FuzzBatchResultLine(f *testing.F) {
	f.Add([]byte(`{"id":"r","custom_id":"a-0","response":{"status_code":200,"request_id":"q","body":{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}},"error":null}`))
	f.Add([]byte(`{"custom_id":"a-0","response":{"status_code":500,"body":{"error":{"message":"x"}}},"error":null}`))
	f.Add([]byte(`{"custom_id":"a-0","response":null,"error":{"code":"batch_expired","message":"m"}}`))
	j, err := New(testConfig("http://127.0.0.1:1/v1"), WithAPIKey(testKey))
	if err != nil {
		f.Fatal(err)
	}
	b := newBatcher(j, j.provider.(batchWire), BatchOptions{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var l openaiResultLine
		if json.Unmarshal(raw, &l) != nil {
			return
		}
		r := b.decode(openaiLineResult(l), 0)
		if r.f == nil && len(r.comp.choices) == 0 {
			t.Fatalf("a completion without a choice from %s", raw)
		}
	})
}

// A line of a batch that ended before its request was asked for again (a
// resumed run's case still queued) answers it when it is, decoded as a
// fresh reply is.
func TestBatchLineKeptUntilAsked(t *testing.T) {
	srv := judgetest.New(t)
	srv.SetBatchMode(judgetest.BatchManual)
	state := &memState{puts: make(chan string, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	srv.OnBatchCreate(func(string) { cancel() })
	doAll(ctx, batchJudge(t, srv, 2, state, false).judge, prompts(2))
	<-state.puts
	<-state.puts
	state.puts = nil
	if err := srv.CompleteBatch(srv.Batches()[0].ID); err != nil {
		t.Fatal(err)
	}
	second := batchJudge(t, srv, 2, state, false)
	ps := prompts(2)
	for _, p := range ps { // one at a time: the second's line waits for it
		r := second.judge.Do(WithBatching(context.Background()), userRequest(p))
		mustOK(t, r)
		if r.Content != judgetest.DefaultContent {
			t.Errorf("%s: content %q", p, r.Content)
		}
	}
	if n := srv.BatchCreates(); n != 1 {
		t.Errorf("%d batches created; want 1", n)
	}
}
