package transport

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
)

// Guard is the one gate between a guest and the host's services, whatever
// the transport: the Wasm host functions, the process transport's gRPC
// callbacks and the inproc sdk.Host all go through it, so a capability,
// a budget and a log bound behave the same everywhere. One guard serves
// one invocation (or one describe call, with no Services).
//
// What a guard enforces, in order: the capability (asked in the
// descriptor AND granted by the operator), the payload size (before a
// byte is copied), the JSON rules of guest output (DecodeStrict), the
// ranges of the request's numbers, the judge-call budget and the
// judge-token budget — the latter on an estimate of every request before
// it is sent, settled against what the judge reports afterwards.
type Guard struct {
	svc    Services // nil outside an invocation: describing, warming
	info   Info
	grants Grants
	limits Limits
	// logger receives log records when there are no Services.
	logger *slog.Logger
	// kindName is the kind the invocation runs ("" outside one: then the
	// plugin-level capabilities decide); kind is its descriptor, nil when
	// the plugin has no such kind (it is then granted nothing).
	kindName string
	kind     *abi.KindDescriptor

	// clock is the invocation's time limit, held while the guest waits
	// on a judge call or an embedding; nil outside an invocation.
	clock *Clock

	mu     sync.Mutex
	calls  int
	tokens int // spent, plus what batches in flight reserved

	logs *LogTally
}

// LogTally counts log records, kept and dropped: one invocation's, or
// those a process sends outside any invocation over its life.
type LogTally struct {
	mu             sync.Mutex
	records, bytes int
	// dropped counts records over the limits or malformed; problem is the
	// first reason, for the summary record.
	dropped, droppedBytes int
	problem               string
}

// NewGuard makes the guard of one invocation over svc (nil outside one:
// describing, warming), with the plugin's grants and limits; logger
// receives log records when there are no Services (nil discards them).
func NewGuard(svc Services, info Info, opts Options, logger *slog.Logger) *Guard {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{svc: svc, info: info, grants: opts.Grants, limits: opts.Limits, logger: logger, logs: &LogTally{}}
}

// Timed makes the guard stop c while the guest waits on the judge: the
// invocation's time limit counts the guest's time, not the judge's.
func (g *Guard) Timed(c *Clock) *Guard {
	g.clock = c
	return g
}

// LogsIn makes the guard count its log records in t, which outlives it:
// the records a process sends outside any invocation share one tally over
// the process's life.
func (g *Guard) LogsIn(t *LogTally) *Guard {
	g.logs = t
	return g
}

// Dropped is how many records t has dropped and not yet reported.
func (t *LogTally) Dropped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// JudgeCoster is implemented by Services that can bound what a judge
// request may spend before it is sent: the judge it is routed to knows its
// default reply cap and whether samples will be drawn. Services without it
// are charged the host's estimate of the prompt plus the request's own
// max_tokens, times its samples.
type JudgeCoster interface {
	// JudgeCost bounds the input+output tokens req may spend.
	JudgeCost(req abi.JudgeRequest) int
}

// Payload is a guest's message to a host service that has not been read
// yet: its size comes first, so what the host refuses is never copied.
type Payload interface {
	Size() (int, *abi.Error)
	Read() ([]byte, *abi.Error)
}

// BytesPayload is a payload a transport has already received (bounded by
// the transport itself).
type BytesPayload []byte

func (b BytesPayload) Size() (int, *abi.Error)    { return len(b), nil }
func (b BytesPayload) Read() ([]byte, *abi.Error) { return b, nil }

// ForRequest narrows the guard to the kind req names (a PrepareRequest,
// MeasureRequest or NodeRequest): from ABI minor 1 a kind may ask for
// capabilities of its own, and the invocation gets what its kind asks.
func (g *Guard) ForRequest(req any) *Guard {
	var role abi.Role
	switch r := req.(type) {
	case *abi.PrepareRequest:
		role, g.kindName = abi.RoleMetric, r.Kind
	case *abi.MeasureRequest:
		role, g.kindName = abi.RoleMetric, r.Kind
	case *abi.NodeRequest:
		role, g.kindName = abi.RoleNode, r.Kind
	default:
		return g
	}
	if k, ok := g.info.Descriptor.KindOf(g.kindName, role); ok {
		g.kind = &k
	}
	return g
}

// asks reports whether the invocation's kind (or, outside an invocation,
// the plugin) asks for c.
func (g *Guard) asks(c abi.Capability) bool {
	switch {
	case g.kindName == "":
		return g.info.Descriptor.Asks(c)
	case g.kind == nil:
		return false
	}
	return g.info.Descriptor.KindAsks(*g.kind, c)
}

// Denied says why the judge may not be called in this guard, or nil.
func (g *Guard) Denied() *abi.Error {
	switch {
	case !g.grants.Judge:
		return Named(g.info, abi.Errorf(abi.CodeCapability,
			"capability %q is not granted to this plugin (grant it under plugins.<name>.grants in the config)", abi.CapJudge))
	case g.kind != nil && g.kind.Capabilities != nil && !g.asks(abi.CapJudge):
		return Named(g.info, abi.Errorf(abi.CodeCapability,
			"capability %q: kind %q does not ask for it in the plugin's descriptor; a capability is usable only when the invocation's kind asks for it and it is granted", abi.CapJudge, g.kindName))
	case !g.asks(abi.CapJudge):
		return Named(g.info, abi.Errorf(abi.CodeCapability,
			"capability %q is granted but the plugin's descriptor does not ask for it; a capability is usable only when asked for and granted", abi.CapJudge))
	case g.svc == nil:
		return Named(g.info, abi.Errorf(abi.CodeCapability,
			"judge calls are only possible while preparing, measuring or running a node, not while describing"))
	}
	return nil
}

// readGuestRequest reads and strictly decodes what a guest sent to a
// host function: nothing is read unless the capability is granted, and
// nothing larger than max_output_bytes; what names the request in errors.
func readGuestRequest[T any](g *Guard, p Payload, what string) (T, *abi.Error) {
	var v T
	if err := g.Denied(); err != nil {
		return v, err
	}
	n, aerr := p.Size()
	if aerr != nil {
		return v, Named(g.info, aerr)
	}
	if max := g.limits.MaxOutputBytes; n > max {
		return v, Named(g.info, abi.Errorf(abi.CodeOutputTooLarge, "%s is %d bytes, max_output_bytes is %d", what, n, max))
	}
	raw, aerr := p.Read()
	if aerr != nil {
		return v, Named(g.info, aerr)
	}
	if err := DecodeStrict(raw, &v); err != nil {
		return v, Named(g.info, abi.Errorf(abi.CodeABI, "%s: %v", what, err))
	}
	return v, nil
}

// JudgePayload answers a JudgeBatch a remote guest sent. Every refusal is
// data in the result; a denied capability is answered without reading the
// batch at all.
func (g *Guard) JudgePayload(ctx context.Context, p Payload) *abi.JudgeBatchResult {
	refuse := func(e *abi.Error) *abi.JudgeBatchResult {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: e}
	}
	batch, aerr := readGuestRequest[abi.JudgeBatch](g, p, "judge batch")
	if aerr != nil {
		return refuse(aerr)
	}
	resps, err := g.Judge(ctx, batch.Requests)
	if err != nil {
		return refuse(err)
	}
	return &abi.JudgeBatchResult{Responses: resps}
}

// Judge answers a batch, or a batch-level error when the capability is
// denied, a request breaks the ABI, or a budget cannot cover the batch.
func (g *Guard) Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, *abi.Error) {
	if err := g.Denied(); err != nil {
		return nil, err
	}
	if err := checkJudgeRequests(reqs); err != nil {
		return nil, Named(g.info, abi.Errorf(abi.CodeABI, "judge batch: %v", err))
	}
	if len(reqs) == 0 {
		return []abi.JudgeResponse{}, nil
	}
	costs := make([]int, len(reqs))
	reserved := 0
	for i, r := range reqs {
		costs[i] = g.cost(r)
		reserved = addCapped(reserved, costs[i])
	}
	if err := g.admit(len(reqs), reserved, costs); err != nil {
		return nil, err
	}

	release := g.clock.Hold()
	resps := g.svc.Judge(ctx, reqs)
	release()
	spent := 0
	if len(resps) == len(reqs) {
		for _, r := range resps {
			if !r.Usage.CacheHit {
				spent = addCapped(spent, max(r.Usage.InputTokens, 0)+max(r.Usage.OutputTokens, 0))
			}
		}
	}
	g.mu.Lock()
	g.tokens = addCapped(g.tokens-reserved, spent)
	g.mu.Unlock()
	if len(resps) != len(reqs) {
		return nil, Named(g.info, abi.Errorf(abi.CodeJudge, "host answered %d of %d judge requests", len(resps), len(reqs)))
	}
	return resps, nil
}

// admit reserves a batch's calls and estimated tokens, or refuses it whole.
func (g *Guard) admit(calls, tokens int, costs []int) *abi.Error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calls+calls > g.limits.MaxJudgeCalls {
		return Named(g.info, abi.Errorf(abi.CodeBudget,
			"judge-call budget: %d used + %d asked > max_judge_calls %d", g.calls, calls, g.limits.MaxJudgeCalls))
	}
	if limit := g.limits.MaxJudgeTokens; addCapped(g.tokens, tokens) > limit {
		for i, c := range costs {
			if c > limit {
				return Named(g.info, abi.Errorf(abi.CodeBudget,
					"judge-token budget: requests[%d] alone may spend ~%d tokens (prompt estimate + reply cap), over max_judge_tokens %d; it was not sent",
					i, c, limit))
			}
		}
		return Named(g.info, abi.Errorf(abi.CodeBudget,
			"judge-token budget: %d used + ~%d this batch may spend > max_judge_tokens %d; it was not sent", g.tokens, tokens, limit))
	}
	g.calls += calls
	g.tokens = addCapped(g.tokens, tokens)
	return nil
}

// cost bounds what req may spend before it is sent.
func (g *Guard) cost(req abi.JudgeRequest) int {
	if c, ok := g.svc.(JudgeCoster); ok {
		return max(c.JudgeCost(req), 0)
	}
	n := addCapped(judge.EstimateTokens(req), req.MaxTokens)
	if req.Score != nil && req.Score.Samples > 1 {
		n = mulCapped(n, req.Score.Samples)
	}
	return n
}

// EmbedPayload answers an EmbedRequest a remote guest sent, as
// JudgePayload answers a batch: every refusal is data, and a denied
// capability is answered without reading the request.
func (g *Guard) EmbedPayload(ctx context.Context, p Payload) *abi.EmbedResult {
	refuse := func(e *abi.Error) *abi.EmbedResult {
		return &abi.EmbedResult{Vectors: [][]float64{}, Error: e}
	}
	req, aerr := readGuestRequest[abi.EmbedRequest](g, p, "embed request")
	if aerr != nil {
		return refuse(aerr)
	}
	res := g.Embed(ctx, req)
	return &res
}

// Embed answers an embed request. It is a judge call for the budgets:
// one against max_judge_calls, whatever the number of texts (the judge
// layer batches them), and the texts' estimated tokens against
// max_judge_tokens, settled against the tokens the judge reports.
func (g *Guard) Embed(ctx context.Context, req abi.EmbedRequest) abi.EmbedResult {
	refuse := func(e *abi.Error) abi.EmbedResult {
		return abi.EmbedResult{Vectors: [][]float64{}, Error: e}
	}
	if err := g.Denied(); err != nil {
		return refuse(err)
	}
	svc, ok := g.svc.(EmbedServices)
	if !ok {
		return refuse(Named(g.info, abi.Errorf(abi.CodeCapability, "this host's services do not embed (%s)", abi.HostEmbed)))
	}
	switch n := len(req.Texts); {
	case n == 0:
		return refuse(Named(g.info, abi.Errorf(abi.CodeABI, "embed request: texts is empty; want at least one")))
	case n > abi.MaxEmbedTexts:
		return refuse(Named(g.info, abi.Errorf(abi.CodeABI, "embed request: %d texts; at most %d a request", n, abi.MaxEmbedTexts)))
	}
	cost := judge.EstimateEmbedTokens(req.Texts)
	if err := g.admit(1, cost, []int{cost}); err != nil {
		return refuse(err)
	}
	release := g.clock.Hold()
	res := svc.Embed(ctx, req)
	release()
	spent := 0
	if !res.Usage.CacheHit {
		spent = max(res.Usage.InputTokens, 0)
	}
	g.mu.Lock()
	g.tokens = addCapped(g.tokens-cost, spent)
	g.mu.Unlock()
	if res.Error != nil {
		res.Vectors = [][]float64{}
		return res
	}
	if len(res.Vectors) != len(req.Texts) {
		return abi.EmbedResult{Vectors: [][]float64{}, Usage: res.Usage,
			Error: Named(g.info, abi.Errorf(abi.CodeJudge, "host answered %d vectors for %d texts", len(res.Vectors), len(req.Texts)))}
	}
	return res
}

// checkJudgeRequests applies the ABI's ranges to the numbers of a batch a
// guest wrote. A score range that is empty is the judge's to report per
// request (invalid_config), not a malformed batch.
func checkJudgeRequests(reqs []abi.JudgeRequest) error {
	temperature := func(p *float64) bool { return p == nil || (*p >= 0 && *p <= 2) }
	for i, r := range reqs {
		switch {
		case r.TopLogprobs < 0:
			return fmt.Errorf("requests[%d].top_logprobs is %d; want >= 0", i, r.TopLogprobs)
		case r.MaxTokens < 0:
			return fmt.Errorf("requests[%d].max_tokens is %d; want >= 0", i, r.MaxTokens)
		case !temperature(r.Temperature):
			return fmt.Errorf("requests[%d].temperature is %v; want [0,2]", i, *r.Temperature)
		case r.Score != nil && r.Score.Samples < 0:
			return fmt.Errorf("requests[%d].score.samples is %d; want >= 0", i, r.Score.Samples)
		case r.Score != nil && !temperature(r.Score.SampleTemperature):
			return fmt.Errorf("requests[%d].score.sample_temperature is %v; want [0,2]", i, *r.Score.SampleTemperature)
		}
	}
	return nil
}

// LogPayload records a LogRecord a remote guest sent, within the
// invocation's record and byte limits; the excess and malformed records
// are dropped and counted (finish reports them once). Logging never fails
// a case.
func (g *Guard) LogPayload(ctx context.Context, p Payload) {
	n, aerr := p.Size()
	if aerr != nil {
		g.drop(0, aerr.Message)
		return
	}
	if !g.take(n) {
		return
	}
	raw, aerr := p.Read()
	if aerr != nil {
		g.drop(0, aerr.Message)
		return
	}
	var rec abi.LogRecord
	if err := DecodeStrict(raw, &rec); err != nil {
		g.drop(0, fmt.Sprintf("log record: %s: %v", abi.CodeABI, err))
		return
	}
	g.deliver(ctx, rec)
}

// Log records a LogRecord an inproc kind made, under the same limits.
func (g *Guard) Log(ctx context.Context, rec abi.LogRecord) {
	n := len(rec.Level) + len(rec.Message)
	for k, v := range rec.Attrs {
		n += len(k) + len(fmt.Sprint(v))
	}
	if g.take(n) {
		g.deliver(ctx, rec)
	}
}

// take admits a record of n bytes, or counts it as dropped.
func (g *Guard) take(n int) bool {
	t := g.logs
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case n > g.limits.MaxOutputBytes:
		t.note(n, fmt.Sprintf("a %d-byte record is over max_output_bytes %d", n, g.limits.MaxOutputBytes))
	case t.records >= g.limits.MaxLogRecords:
		t.note(n, fmt.Sprintf("more than max_log_records %d records", g.limits.MaxLogRecords))
	case t.bytes+n > g.limits.MaxLogBytes:
		t.note(n, fmt.Sprintf("more than max_log_bytes %d bytes", g.limits.MaxLogBytes))
	default:
		t.records++
		t.bytes += n
		return true
	}
	return false
}

func (g *Guard) drop(n int, why string) {
	g.logs.mu.Lock()
	g.logs.note(n, why)
	g.logs.mu.Unlock()
}

// note counts a dropped record; t.mu is held.
func (t *LogTally) note(n int, why string) {
	t.dropped++
	t.droppedBytes = addCapped(t.droppedBytes, n)
	if t.problem == "" {
		t.problem = why
	}
}

func (g *Guard) deliver(ctx context.Context, rec abi.LogRecord) {
	if g.svc != nil {
		g.svc.Log(ctx, g.info.ID(), rec)
		return
	}
	LogOutside(ctx, g.logger, g.info.ID(), rec)
}

// Finish reports, once, the log records the invocation dropped.
func (g *Guard) Finish(ctx context.Context) {
	t := g.logs
	t.mu.Lock()
	dropped, bytes, problem := t.dropped, t.droppedBytes, t.problem
	t.dropped, t.droppedBytes, t.problem = 0, 0, ""
	t.mu.Unlock()
	if dropped == 0 {
		return
	}
	g.deliver(context.WithoutCancel(ctx), abi.LogRecord{
		Level:   "warn",
		Message: fmt.Sprintf("anvil: %d log records of this invocation dropped (first: %s)", dropped, problem),
		Attrs:   map[string]any{"dropped_records": dropped, "dropped_bytes": bytes},
	})
}

// used reports the calls and tokens spent so far.
func (g *Guard) used() (calls, tokens int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, g.tokens
}

func (g *Guard) String() string {
	c, t := g.used()
	return fmt.Sprintf("%s: %d judge calls, %d tokens", g.info.ID(), c, t)
}

// LogOutside logs a guest's record that has no Services to go to (while
// describing) to the runtime logger.
func LogOutside(ctx context.Context, logger *slog.Logger, pluginID string, rec abi.LogRecord) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(rec.Level)); err != nil {
		level = slog.LevelInfo
	}
	args := []any{"plugin", pluginID}
	for k, v := range rec.Attrs {
		args = append(args, k, v)
	}
	logger.Log(ctx, level, rec.Message, args...)
}

// addCapped and mulCapped add and multiply non-negative counts a guest
// influences without wrapping around into a budget that looks unspent.
func addCapped(a, b int) int {
	if b > 0 && a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func mulCapped(a, b int) int {
	if a > 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}
