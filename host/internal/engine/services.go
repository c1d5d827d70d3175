package engine

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/results"
)

// judges is the set of configured judges a run may call.
type judges struct {
	byName map[string]*judge.Judge
	// unavailable maps a configured judge that cannot be called (no key) to
	// the message telling the operator how to configure it.
	unavailable map[string]string
	// recorded maps a judge answered from a recorded session (no key, and
	// the config names an offline recording) to the note saying so.
	recorded map[string]string
	// recordings maps each replayed judge to the SHA-256 digest of the
	// recording file it loaded (sha256:<hex>).
	recordings map[string]string

	mu     sync.Mutex
	onDown func(error) // the running run's stop, while one runs
}

// services implements plugin.Services for one metric on one case: it routes
// each judge request to the metric's judge (or the one the request names)
// and sums the usage into the metric's result.
type services struct {
	judges       *judges
	defaultJudge string
	// sample is which of a metric's repeated scorings this is (0: the
	// first, or the only one); it keeps each sample's cache entry apart.
	sample int
	// group, when set, sends this sample's requests to its judge together
	// with the other samples' alike requests (samplegroup.go).
	group  *sampleGroup
	logger *slog.Logger
	dryRun *dryRun // estimate: price requests instead of sending them

	mu    sync.Mutex
	usage results.JudgeUsage
	fuel  uint64
	// scores, when set (a cascade judge's scoring), keeps every score
	// request's range and located score, for its P(pass).
	scores *[]scored
}

// scored is one score request's range and its located score (nil when the
// request failed).
type scored struct {
	min, max int
	score    *abi.ScoreResult
}

// RecordFuel implements plugin.FuelRecorder.
func (s *services) RecordFuel(n uint64) {
	s.mu.Lock()
	s.fuel += n
	s.mu.Unlock()
}

// fuelSpent is the Wasm fuel the metric's plugin calls spent.
func (s *services) fuelSpent() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fuel
}

func (s *services) Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(reqs))
	replayed := make([]bool, len(reqs)) // answered by a recorded session
	var grouped []int                   // requests for the group's judge, asked together
	var wg sync.WaitGroup
	for i := range reqs {
		name := reqs[i].Judge
		if name == "" {
			name = s.defaultJudge
		}
		j := s.judges.byName[name]
		_, replayed[i] = s.judges.recorded[name]
		if _, off := s.judges.unavailable[name]; off && s.dryRun == nil {
			j = nil
		}
		if j == nil {
			msg := "no judge named " + name + " is configured"
			if why, ok := s.judges.unavailable[name]; ok {
				msg = why
			}
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "%s", msg)}
			continue
		}
		if s.group != nil && s.group.judge == j {
			grouped = append(grouped, i)
			continue
		}
		wg.Add(1)
		go func(i int, j *judge.Judge) {
			defer wg.Done()
			if s.dryRun != nil {
				out[i] = s.dryRun.respond(ctx, j, reqs[i], s.sample)
			} else {
				out[i] = j.DoSample(ctx, reqs[i], s.sample)
			}
		}(i, j)
	}
	if len(grouped) > 0 {
		batch := make([]abi.JudgeRequest, len(grouped))
		for k, i := range grouped {
			batch[k] = reqs[i]
		}
		for k, r := range s.group.ask(ctx, s.sample, batch) {
			out[grouped[k]] = r
		}
	}
	wg.Wait()
	s.mu.Lock()
	for i, r := range out {
		s.usage.Add(r.Usage, replayed[i])
		if s.scores != nil && reqs[i].Score != nil {
			*s.scores = append(*s.scores, scored{min: reqs[i].Score.Min, max: reqs[i].Score.Max, score: r.Score})
		}
	}
	s.mu.Unlock()
	return out
}

func (s *services) Log(ctx context.Context, pluginID string, rec abi.LogRecord) {
	level := slog.LevelInfo
	switch rec.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := []any{"plugin", pluginID}
	for k, v := range rec.Attrs {
		attrs = append(attrs, k, v)
	}
	s.logger.Log(ctx, level, rec.Message, attrs...)
}

func (s *services) spent() results.JudgeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// watch calls stop with the cause when a judge becomes unavailable (its
// breaker opened: the judge is down or refuses the key), so a run stops at
// once instead of failing every remaining case. It returns a function that
// stops watching. A judge already unavailable stops the run at once.
func (js *judges) watch(stop func(error)) (unwatch func()) {
	js.mu.Lock()
	js.onDown = stop
	js.mu.Unlock()
	for _, name := range sortedKeys(js.byName) {
		if err := js.byName[name].Unavailable(); err != nil {
			stop(err)
			break
		}
	}
	return func() {
		js.mu.Lock()
		js.onDown = nil
		js.mu.Unlock()
	}
}

// down is every judge's OnUnavailable: it passes the cause to the run
// that watches.
func (js *judges) down(err error) {
	js.mu.Lock()
	stop := js.onDown
	js.mu.Unlock()
	if stop != nil {
		stop(err)
	}
}

// judgeReports says, per configured judge, where its answers come from.
// The note (how to configure it, what the recording is) is only for a
// judge some metric calls: a run that needs no judge is not told to set
// a key it has no use for.
func (e *Engine) judgeReports() []results.JudgeReport {
	used := e.usedJudges()
	var out []results.JudgeReport
	for _, name := range sortedKeys(e.judges.byName) {
		j := e.judges.byName[name]
		r := results.JudgeReport{Name: name, Model: j.Model(), Source: "api", Price: judgePrice(j.PriceInfo())}
		if note, ok := e.judges.recorded[name]; ok {
			r.Source, r.Note = "recording", note
		} else if why, ok := e.judges.unavailable[name]; ok {
			r.Source, r.Note = "unavailable", why
		}
		if !used[name] {
			r.Note = ""
		}
		out = append(out, r)
	}
	return out
}

// usedJudges are the judges some metric calls.
func (e *Engine) usedJudges() map[string]bool {
	used := map[string]bool{}
	for _, m := range e.all {
		if m.needsJudge {
			for _, name := range m.judgesUsed() {
				used[name] = true
			}
		}
	}
	return used
}

// judgePrice is a judge's price as the summary reports it.
func judgePrice(info judge.PriceInfo) *results.JudgePrice {
	if !info.Known {
		return &results.JudgePrice{Source: "none", Why: info.Why}
	}
	p := &results.JudgePrice{Source: info.Source,
		InputPerMillion: info.Price.InputPerMillion, CachedInputPerMillion: info.Price.CachedInputPerMillion,
		CacheWritePerMillion: info.Price.CacheWritePerMillion, OutputPerMillion: info.Price.OutputPerMillion}
	if r := info.Row; r != nil {
		p.TableModel, p.URL, p.AsOf = r.Model, r.Source, r.AsOf
	}
	return p
}

// unpriced says, for each judge a metric calls that has no price, why its
// calls have no USD: of the judges called over the API, or (estimate,
// which prices what a keyed run would cost) of all.
func (e *Engine) unpriced(reports []results.JudgeReport, apiOnly bool) []string {
	used := e.usedJudges()
	var out []string
	for _, r := range reports {
		if (r.Source == "api" || !apiOnly) && r.Price != nil && r.Price.Source == "none" && used[r.Name] {
			out = append(out, "judge "+r.Name+": "+r.Price.Why)
		}
	}
	return out
}

// cacheReport is the judge cache's state over the run, nil when all is well.
func (e *Engine) cacheReport() *results.CacheReport {
	r := &results.CacheReport{Error: e.storeErr}
	for _, j := range e.judges.byName {
		r.Unreadable += j.Totals().CacheUnreadable
	}
	if r.Error == "" && r.Unreadable == 0 {
		return nil
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// JudgeCost implements plugin.JudgeCoster: what req may spend, input and
// reply, before it is sent, as the judge it is routed to plans it (its
// default reply cap, samples drawn as separate calls). A plugin's
// max_judge_tokens is checked against it before every batch.
func (s *services) JudgeCost(req abi.JudgeRequest) int {
	name := req.Judge
	if name == "" {
		name = s.defaultJudge
	}
	j := s.judges.byName[name]
	if j == nil {
		return 0 // answered with a judge_error, never sent
	}
	f, err := j.Forecast(req)
	if err != nil {
		return 0 // refused by the judge itself, never sent
	}
	return f.InputTokens + f.Replies*f.MaxTokens
}

// Embed implements plugin.EmbedServices: req's texts through the
// embeddings call of the judge it names (or the metric's), its usage
// summed into the metric's result as a judge request's is. Under
// `estimate` nothing is sent: dryRun.embed prices it.
func (s *services) Embed(ctx context.Context, req abi.EmbedRequest) abi.EmbedResult {
	name := req.Judge
	if name == "" {
		name = s.defaultJudge
	}
	j := s.judges.byName[name]
	_, replayed := s.judges.recorded[name]
	if _, off := s.judges.unavailable[name]; off && s.dryRun == nil {
		j = nil
	}
	var res abi.EmbedResult
	switch {
	case j == nil:
		msg := "no judge named " + name + " is configured"
		if why, ok := s.judges.unavailable[name]; ok {
			msg = why
		}
		res = abi.EmbedResult{Vectors: [][]float64{}, Error: abi.Errorf(abi.CodeJudge, "%s", msg)}
	case s.dryRun != nil:
		res = s.dryRun.embed(ctx, j, req.Texts)
	default:
		e := j.Embed(ctx, req.Texts)
		res = abi.EmbedResult{Vectors: e.Vectors, Usage: e.Usage, Error: e.Error}
		if res.Vectors == nil {
			res.Vectors = [][]float64{}
		}
	}
	s.mu.Lock()
	s.usage.Add(res.Usage, replayed)
	s.mu.Unlock()
	return res
}
