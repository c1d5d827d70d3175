// Command fakejudge is a standalone fake OpenAI-compatible judge server for
// the load harness (bench/run.sh). It serves POST /v1/chat/completions with
// judgetest's wire format and answers every request anvil's first-party
// kinds send, after a fixed latency:
//
//   - G-Eval steps generation: {"steps": [...]}
//   - G-Eval scoring: {"reason": "...", "score": N} (or {"score": N}) whose
//     score token carries top_logprobs; N depends only on a hash of the
//     prompt, so results are stable run to run
//   - DAG task / binary / choice nodes: {"output"} / {"reason","verdict":bool}
//     / {"reason","verdict":"<one of the allowed verdicts>"}
//   - statement metrics: statements / claims / truths lists, verdict lists of
//     the asked length, reasons
//
// Requests are classified by their response_format JSON schema when there is
// one, else by marker text of the prompts (plugins/*/prompt.go).
//
// The first line on stdout is the base URL ("http://127.0.0.1:PORT/v1").
// GET /stats answers {"calls": N, "by_kind": {...}}; on SIGINT/SIGTERM the
// same JSON is written to -calls-file (when set) before exiting.
//
// Requests are not recorded (judgetest.WithoutRecording) so memory stays
// flat over long runs. A reply with logprobs is encoded once and its
// encoding reused for every request that gets the same reply (encoded.go):
// encoding 20 alternatives per token cost the fake judge ~1 ms of CPU per
// reply, on the cores the host under test runs on.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	latency := flag.Duration("latency", 100*time.Millisecond, "fixed delay before every reply")
	callsFile := flag.String("calls-file", "", "write the stats JSON here on SIGINT/SIGTERM")
	topAlts := flag.Int("alts", 20, "alternatives per generated token (capped by the request's top_logprobs), as a real server sends them; 1 sends only the token itself")
	flag.Parse()

	fj := newFake(*latency, *topAlts)
	srv := judgetest.NewServer(judgetest.WithoutRecording(), judgetest.WithDefault(judgetest.ReplyFunc(fj.reply)))

	mux := http.NewServeMux()
	completions := srv.Handler()
	mux.Handle(judgetest.CompletionsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fj.firstRequest.CompareAndSwap(0, time.Now().UnixNano())
		completions.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fj.statsJSON(srv.Calls())) //nolint:errcheck
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakejudge:", err)
		os.Exit(1)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s/v1\n", ln.Addr())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		if *callsFile != "" {
			if err := os.WriteFile(*callsFile, fj.statsJSON(srv.Calls()), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "fakejudge:", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(ctx) //nolint:errcheck
		srv.Close()
	}()
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "fakejudge:", err)
		os.Exit(1)
	}
}

// Request kinds, as counted in /stats.
const (
	kSteps      = "steps"
	kScore      = "score"
	kTask       = "task"
	kBinary     = "binary"
	kChoice     = "choice"
	kStatements = "statements"
	kVerdicts   = "verdicts"
	kReason     = "reason"
	kUnknown    = "unknown"
)

var kinds = []string{kSteps, kScore, kTask, kBinary, kChoice, kStatements, kVerdicts, kReason, kUnknown}

type fake struct {
	// firstRequest is when the first completion request arrived, in Unix ns.
	firstRequest atomic.Int64
	latency      time.Duration
	alts         int
	counts       map[string]*atomic.Int64
	fillers      []string
	// encoded caches replies' choices, encoded (nil: every reply is
	// encoded by judgetest, as the reference in tests).
	encoded *encodedReplies
}

func newFake(latency time.Duration, alts int) *fake {
	f := &fake{latency: latency, alts: max(alts, 1), counts: map[string]*atomic.Int64{}, encoded: newEncodedReplies()}
	for _, k := range kinds {
		f.counts[k] = new(atomic.Int64)
	}
	for i := range 32 {
		f.fillers = append(f.fillers, fmt.Sprintf(" alt%c%c", 'a'+i%26, 'a'+i/26))
	}
	return f
}

func (f *fake) statsJSON(calls int) []byte {
	by := map[string]int64{}
	for k, c := range f.counts {
		if n := c.Load(); n > 0 {
			by[k] = n
		}
	}
	b, _ := json.Marshal(struct {
		Calls  int              `json:"calls"`
		ByKind map[string]int64 `json:"by_kind"`
		// FirstRequestUnixNS is when the first request arrived (bench/startup.sh).
		FirstRequestUnixNS int64 `json:"first_request_unix_ns,omitempty"`
	}{calls, by, f.firstRequest.Load()})
	return append(b, '\n')
}

// schemaProps is the part of a request's JSON schema the classifier reads.
type schemaProps struct {
	Properties map[string]struct {
		Type    string            `json:"type"`
		Minimum *int              `json:"minimum"`
		Maximum *int              `json:"maximum"`
		Enum    []json.RawMessage `json:"enum"`
	} `json:"properties"`
}

var (
	reRange    = regexp.MustCompile(`An integer from (\d+) to (\d+)`)
	reStrict   = regexp.MustCompile(`STRICTLY either 1 or 0`)
	reExactly  = regexp.MustCompile(`a list of exactly (\d+) objects`)
	reRepairN  = regexp.MustCompile(`with exactly (\d+) verdicts`)
	reAllowed  = regexp.MustCompile(`Allowed verdicts \(copy one exactly\): (\[.*\])`)
	reListKey  = regexp.MustCompile(`Return only a JSON object with one key, "(statements|claims|truths)"`)
	stepsMark  = "concise evaluation steps that a judge will follow"
	caseMark   = "<<<BEGIN TEST CASE>>>"
	binaryMark = `the boolean true (the criterion holds)`
	taskMark   = `Return only a JSON object with one key, "output"`
	reasonMark = `Return only a JSON object with one key, "reason"`
)

func (f *fake) count(kind string) { f.counts[kind].Add(1) }

// reply answers one request.
func (f *fake) reply(req judgetest.RecordedRequest) judgetest.Reply {
	r, shape := f.answer(req)
	r.Latency = f.latency
	if f.encoded != nil && req.Logprobs && f.alts > 1 && req.N <= 1 {
		if body, ok := f.encoded.body(req, r, shape, func() []abi.TokenLogprob { return f.tokens(req, r) }); ok {
			return judgetest.Reply{RawBody: body, ContentType: "application/json", Latency: f.latency}
		}
	}
	if req.Logprobs && f.alts > 1 {
		r.Logprobs = f.tokens(req, r)
	}
	return r
}

// tokens are r's tokens as sent to req: the reply's own, or its content
// tokenized, each padded to the alternatives asked for.
func (f *fake) tokens(req judgetest.RecordedRequest, r judgetest.Reply) []abi.TokenLogprob {
	tokens := r.Logprobs
	if len(tokens) == 0 && r.Content != "" {
		tokens = judgetest.Tokens(r.Content)
	}
	f.pad(tokens, min(f.alts, req.TopLogprobs))
	return tokens
}

// pad gives every token up to n alternatives, the extra ones improbable
// (below the 1% cut of logprob weighting) and never numeric, as a real
// server's top_logprobs list would be.
func (f *fake) pad(tokens []abi.TokenLogprob, n int) {
	for i := range tokens {
		t := &tokens[i]
		have := map[string]bool{}
		for _, a := range t.Top {
			have[a.Token] = true
		}
		lp := math.Log(1e-4)
		for k := 0; len(t.Top) < n && k < len(f.fillers); k++ {
			if have[f.fillers[k]] {
				continue
			}
			t.Top = append(t.Top, abi.TopLogprob{Token: f.fillers[k], Logprob: lp})
			lp -= 0.25
		}
	}
}

func hash(req judgetest.RecordedRequest) uint64 {
	h := fnv.New64a()
	for _, m := range req.Messages {
		h.Write([]byte(m.Role))
		h.Write([]byte(m.Content))
	}
	return h.Sum64()
}

var reasons = []string{
	"The actual output addresses the input directly and agrees with the expected output on the main points.",
	"The actual output covers part of what the input asks but leaves out details the expected output gives.",
	"The actual output is fluent but drifts from the question and contradicts the expected output in places.",
	"The actual output answers the input clearly, with only minor omissions compared with the expected output.",
	"The actual output misses the point of the input and gives little of what the expected output contains.",
}

// answer is the reply to req and its shape: what, beyond the content,
// decides the reply's tokens (a score's range).
func (f *fake) answer(req judgetest.RecordedRequest) (judgetest.Reply, string) {
	h := hash(req)
	text := ""
	for _, m := range req.Messages {
		text += m.Content + "\n"
	}
	last := req.LastMessage()

	// Classify by schema first.
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
		var s schemaProps
		if json.Unmarshal(rf.JSONSchema.Schema, &s) == nil {
			p := s.Properties
			switch {
			case has(p, "steps"):
				return f.steps(h), ""
			case has(p, "score"):
				sc := p["score"]
				lo, hi := 0, 10
				if sc.Minimum != nil {
					lo = *sc.Minimum
				}
				if sc.Maximum != nil {
					hi = *sc.Maximum
				}
				return f.score(h, lo, hi, has(p, "reason")), fmt.Sprint(lo, "-", hi)
			case has(p, "verdicts"):
				return f.verdicts(h, verdictCount(last)), ""
			case has(p, "verdict") && p["verdict"].Type == "boolean":
				return f.binary(h), ""
			case has(p, "verdict") && len(p["verdict"].Enum) > 0:
				var opts []string
				for _, e := range p["verdict"].Enum {
					var v string
					if json.Unmarshal(e, &v) == nil {
						opts = append(opts, v)
					}
				}
				return f.choice(h, opts), ""
			case has(p, "output"):
				return f.task(h), ""
			case has(p, "statements"):
				return f.list(h, "statements"), ""
			case has(p, "claims"):
				return f.list(h, "claims"), ""
			case has(p, "truths"):
				return f.list(h, "truths"), ""
			case has(p, "reason") && len(p) == 1:
				return f.reason(h), ""
			}
		}
	}

	// No (known) schema: classify by the prompts' text.
	switch {
	case strings.Contains(text, stepsMark):
		return f.steps(h), ""
	case strings.Contains(text, caseMark):
		if reStrict.MatchString(text) {
			return f.score(h, 0, 1, strings.Contains(text, `"reason"`)), "0-1"
		}
		lo, hi := 0, 10
		if m := reRange.FindStringSubmatch(text); m != nil {
			lo, _ = strconv.Atoi(m[1])
			hi, _ = strconv.Atoi(m[2])
		}
		return f.score(h, lo, hi, strings.Contains(text, `1. "reason"`)), fmt.Sprint(lo, "-", hi)
	case reExactly.MatchString(text) || reRepairN.MatchString(last):
		return f.verdicts(h, verdictCount(last+"\n"+text)), ""
	case strings.Contains(text, binaryMark):
		return f.binary(h), ""
	case reAllowed.MatchString(text):
		var opts []string
		json.Unmarshal([]byte(reAllowed.FindStringSubmatch(text)[1]), &opts) //nolint:errcheck
		return f.choice(h, opts), ""
	case strings.Contains(text, taskMark):
		return f.task(h), ""
	case reListKey.MatchString(text):
		return f.list(h, reListKey.FindStringSubmatch(text)[1]), ""
	case strings.Contains(text, reasonMark):
		return f.reason(h), ""
	}
	f.count(kUnknown)
	return judgetest.Reply{Content: judgetest.DefaultContent}, ""
}

func has[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func verdictCount(text string) int {
	if m := reRepairN.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if m := reExactly.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 3
}

func jsonReply(v any) judgetest.Reply {
	b, _ := json.Marshal(v)
	return judgetest.Reply{Content: string(b)}
}

func (f *fake) steps(uint64) judgetest.Reply {
	f.count(kSteps)
	return jsonReply(map[string][]string{"steps": {
		"Read the Input and identify exactly what it asks for.",
		"Compare the Actual Output with the Expected Output, noting facts that agree, are missing or contradict it.",
		"Check that the Actual Output answers the Input directly, without irrelevant or invented content.",
		"Weigh contradictions and omissions most heavily, then minor issues of clarity.",
	}})
}

// score answers a scoring call: score s in [lo, hi] from the hash, with most
// of the probability on s and the rest on its neighbours.
func (f *fake) score(h uint64, lo, hi int, reason bool) judgetest.Reply {
	f.count(kScore)
	if hi < lo {
		lo, hi = hi, lo
	}
	width := hi - lo + 1
	s := lo + int(h%uint64(width))
	alts := map[string]float64{strconv.Itoa(s): 0.6}
	switch {
	case width == 2:
		alts[strconv.Itoa(lo+hi-s)] = 0.1
		alts[strconv.Itoa(s)] = 0.9
	default:
		if s-1 >= lo {
			alts[strconv.Itoa(s-1)] = 0.25
		}
		if s+1 <= hi {
			alts[strconv.Itoa(s+1)] = 0.15
		}
	}
	if hi >= 10 {
		// Like a real BPE tokenizer (cl100k, o200k), numbers up to 999 are
		// one token: list the range's top as an improbable alternative.
		// The host does not infer the tokenizer from it (bench/anvil.yaml
		// says number_tokens: whole); it keeps the replies as they were.
		if _, ok := alts[strconv.Itoa(hi)]; !ok {
			alts[strconv.Itoa(hi)] = 0.005
		}
	}
	prefix := `{"score": `
	if reason {
		prefix = fmt.Sprintf(`{"reason": %q, "score": `, reasons[(h>>8)%uint64(len(reasons))])
	}
	tokens := judgetest.ScoreTokens(prefix, strconv.Itoa(s), alts)
	tokens = append(tokens, judgetest.Tokens("}")...)
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(t.Token)
	}
	return judgetest.Reply{Content: b.String(), Logprobs: tokens}
}

func (f *fake) binary(h uint64) judgetest.Reply {
	f.count(kBinary)
	return jsonReply(struct {
		Reason  string `json:"reason"`
		Verdict bool   `json:"verdict"`
	}{reasons[h%uint64(len(reasons))], h%3 != 0})
}

func (f *fake) choice(h uint64, opts []string) judgetest.Reply {
	f.count(kChoice)
	v := ""
	if len(opts) > 0 {
		v = opts[h%uint64(len(opts))]
	}
	return jsonReply(struct {
		Reason  string `json:"reason"`
		Verdict string `json:"verdict"`
	}{reasons[(h>>8)%uint64(len(reasons))], v})
}

func (f *fake) task(h uint64) judgetest.Reply {
	f.count(kTask)
	return jsonReply(map[string]string{"output": reasons[h%uint64(len(reasons))]})
}

func (f *fake) list(h uint64, key string) judgetest.Reply {
	f.count(kStatements)
	n := 2 + int(h%3)
	items := make([]string, n)
	for i := range items {
		items[i] = reasons[(h+uint64(i))%uint64(len(reasons))]
	}
	return jsonReply(map[string][]string{key: items})
}

func (f *fake) verdicts(h uint64, n int) judgetest.Reply {
	f.count(kVerdicts)
	type verdict struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
	out := make([]verdict, n)
	for i := range out {
		switch (h >> (i % 32)) % 5 {
		case 0:
			out[i] = verdict{"no", "It does not address the input."}
		case 1:
			out[i] = verdict{"idk", "It is only loosely related."}
		default:
			out[i] = verdict{"yes", ""}
		}
	}
	return jsonReply(map[string]any{"verdicts": out})
}

func (f *fake) reason(h uint64) judgetest.Reply {
	f.count(kReason)
	return jsonReply(map[string]string{"reason": reasons[h%uint64(len(reasons))]})
}
