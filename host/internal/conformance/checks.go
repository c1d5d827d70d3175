package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin"
)

// checks lists every check after load, in the order they run. Per-kind
// checks are generated from the descriptor.
func (e *env) checks() []check {
	d := e.p.Info().Descriptor
	cs := []check{
		{"descriptor/abi-version", checkABIVersion},
		{"descriptor/schema", checkDescriptorSchema},
		{"descriptor/kinds", checkKinds},
		{"descriptor/config-schemas", checkConfigSchemas},
		{"descriptor/capabilities", checkCapabilities},
	}
	for _, name := range e.schemas.vectorNames() {
		cs = append(cs, check{"golden/" + strings.TrimSuffix(name, ".json"), goldenCheck(name)})
	}
	for _, k := range sortedKinds(d) {
		kr := e.kindRun(k)
		pre := string(k.Role) + "/" + k.Name + "/"
		if kr.skip != "" {
			cs = append(cs, check{pre + "*", func(context.Context, *env) (Status, string) { return Skip, kr.skip }})
			continue
		}
		if k.Prepare {
			cs = append(cs, check{pre + "prepare", kr.checkPrepare})
		}
		cs = append(cs, check{pre + "all-fields", kr.unlessNeedsConfig(kr.checkCase(fullCase("kit-full")))})
		rest := []check{
			{pre + "golden-request", kr.checkGoldenRequest},
			{pre + "missing-fields", kr.checkMissing},
			{pre + "unicode", kr.checkCase(unicodeCase())},
			{pre + "large-input", kr.checkCase(largeCase())},
			{pre + "determinism", kr.checkDeterminism},
			{pre + "unknown-fields", kr.checkUnknownFields},
			{pre + "concurrency", kr.checkConcurrency},
			{pre + "after-timeout", kr.checkAfterTimeout},
		}
		if kr.asksJudge {
			rest = append(rest,
				check{pre + "judge/granted", kr.checkJudgeGranted},
				check{pre + "judge/denied", kr.checkJudgeDenied},
				check{pre + "judge/token-budget", kr.checkTokenBudget},
				check{pre + "judge/call-budget", kr.checkCallBudget},
			)
		} else {
			rest = append(rest, check{pre + "judge/not-asked", kr.checkNotAsked})
		}
		for _, c := range rest {
			cs = append(cs, check{c.name, kr.unlessBroken(c.run)})
		}
	}
	return cs
}

// unlessBroken skips a check of a kind whose full case crashed: the kit
// has already failed it, and every further call would crash the same way.
func (kr *kindRun) unlessBroken(run func(context.Context, *env) (Status, string)) func(context.Context, *env) (Status, string) {
	return kr.unlessNeedsConfig(func(ctx context.Context, e *env) (Status, string) {
		if kr.broken {
			return Skip, "not run: the case with every field set already failed the invocation"
		}
		return run(ctx, e)
	})
}

// unlessNeedsConfig skips a check of a kind that refused the empty config
// the kit gave it for want of one: a config the author must supply, which
// its config_schema did not say was required (a requirement a schema
// cannot state, "criteria or evaluation_steps").
func (kr *kindRun) unlessNeedsConfig(run func(context.Context, *env) (Status, string)) func(context.Context, *env) (Status, string) {
	return func(ctx context.Context, e *env) (Status, string) {
		if kr.needsConfig != "" {
			return Skip, kr.needsConfig
		}
		return run(ctx, e)
	}
}

// refusedEmptyConfig notes that the kind answered the kit's own empty
// config with invalid_config, and says what to pass instead.
func (kr *kindRun) refusedEmptyConfig(msg string) (Status, string) {
	kr.needsConfig = fmt.Sprintf("the kind refuses an empty config (invalid_config: %s): pass --config %s='{...}' (or --config-file) to test this kind",
		oneLine(msg), kr.k.Name)
	return Skip, kr.needsConfig
}

func checkABIVersion(_ context.Context, e *env) (Status, string) {
	d := e.p.Info().Descriptor
	if d.ABIMajor != abi.Major {
		return Fail, fmt.Sprintf("abi_major %d; this host speaks %d", d.ABIMajor, abi.Major)
	}
	if d.ABIMinor > abi.Minor {
		return Fail, fmt.Sprintf("abi_minor %d is newer than this host's %d.%d", d.ABIMinor, abi.Major, abi.Minor)
	}
	return Pass, fmt.Sprintf("v%d.%d (host speaks v%d.%d)", d.ABIMajor, d.ABIMinor, abi.Major, abi.Minor)
}

func checkDescriptorSchema(_ context.Context, e *env) (Status, string) {
	if err := e.schemas.validate("descriptor", e.p.Info().Descriptor); err != nil {
		return Fail, err.Error()
	}
	return Pass, "descriptor valid against abi/v1/schema/descriptor.json"
}

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func checkKinds(_ context.Context, e *env) (Status, string) {
	d := e.p.Info().Descriptor
	if len(d.Kinds) == 0 {
		return Fail, "the descriptor declares no kinds"
	}
	seen := map[string]bool{}
	var parts []string
	for _, k := range d.Kinds {
		if k.Role != abi.RoleMetric && k.Role != abi.RoleNode {
			return Fail, fmt.Sprintf("kind %q has role %q; want metric or node", k.Name, k.Role)
		}
		if !kindName.MatchString(k.Name) {
			return Fail, fmt.Sprintf("kind name %q: want [a-z][a-z0-9_]*", k.Name)
		}
		key := string(k.Role) + "/" + k.Name
		if seen[key] {
			return Fail, fmt.Sprintf("%s declared twice", key)
		}
		seen[key] = true
		parts = append(parts, key)
	}
	return Pass, fmt.Sprintf("%d kinds: %s", len(d.Kinds), strings.Join(parts, ", "))
}

func checkConfigSchemas(_ context.Context, e *env) (Status, string) {
	n := 0
	for _, k := range e.p.Info().Descriptor.Kinds {
		if len(k.ConfigSchema) == 0 {
			continue
		}
		if _, err := plugin.CompileSchema(k.ConfigSchema); err != nil {
			return Fail, fmt.Sprintf("kind %s: config_schema: %v", k.Name, oneLine(err.Error()))
		}
		n++
	}
	if n == 0 {
		return Pass, "no kind publishes a config_schema (consider one: `plugin inspect` shows it to operators)"
	}
	return Pass, fmt.Sprintf("%d config schemas compile (draft 2020-12, self-contained)", n)
}

func checkCapabilities(_ context.Context, e *env) (Status, string) {
	d := e.p.Info().Descriptor
	if len(d.Capabilities) == 0 {
		return Pass, "asks for none"
	}
	var cs []string
	for _, c := range d.Capabilities {
		if c != abi.CapJudge {
			return Fail, fmt.Sprintf("asks for unknown capability %q (ABI v1 has only %q)", c, abi.CapJudge)
		}
		cs = append(cs, string(c))
	}
	for _, k := range d.Kinds {
		for _, c := range k.Capabilities {
			if !d.Asks(c) {
				return Fail, fmt.Sprintf("kind %s asks for %q, which the plugin's capabilities do not list", k.Name, c)
			}
		}
	}
	return Pass, "asks for " + strings.Join(cs, ", ")
}

// goldenCheck decodes a golden vector strictly into its Go type and
// validates it against its schema: the contract the plugin is tested
// against is the one published. Request vectors are also fed to the
// plugin by each kind's golden-request check.
func goldenCheck(file string) func(context.Context, *env) (Status, string) {
	return func(_ context.Context, e *env) (Status, string) {
		raw := e.schemas.vectors[file]
		msg := messageOf(file)
		if err := e.schemas.validate(msg, raw); err != nil {
			return Fail, err.Error()
		}
		return Pass, "valid against abi/v1/schema/" + msg + ".json"
	}
}

// kindRun is one kind with what it is run with.
type kindRun struct {
	e         *env
	k         abi.KindDescriptor
	config    json.RawMessage
	verdicts  []string
	asksJudge bool
	skip      string
	// defaulted: no config was given, so the kind runs with {};
	// needsConfig is set when it refused that with invalid_config.
	defaulted   bool
	needsConfig string

	broken bool // the full case crashed: the kind's further checks are skipped

	prepOnce sync.Once
	prepared json.RawMessage
	prepErr  string
	prepCode abi.Code // prepare's error code, if it returned one
}

func (e *env) kindRun(k abi.KindDescriptor) *kindRun {
	kr := &kindRun{e: e, k: k, asksJudge: e.p.Info().Descriptor.KindAsks(k, abi.CapJudge)}
	kr.verdicts = k.Verdicts
	if v, ok := e.opts.Verdicts[k.Name]; ok {
		kr.verdicts = v
	}
	if c, ok := e.opts.Configs[k.Name]; ok {
		kr.config = c
		return kr
	}
	kr.config, kr.defaulted = json.RawMessage(`{}`), true
	var s struct {
		Required []string `json:"required"`
	}
	if len(k.ConfigSchema) > 0 && json.Unmarshal(k.ConfigSchema, &s) == nil && len(s.Required) > 0 {
		kr.skip = fmt.Sprintf("config_schema requires %s: pass --config %s='{...}' (or --config-file) to test this kind",
			strings.Join(s.Required, ", "), k.Name)
	}
	return kr
}

// outcome is one invocation's result.
type outcome struct {
	raw   []byte   // the result, as the host decoded it, re-encoded
	code  abi.Code // the result's error code, if any
	field string
	err   error // the invocation failed: trap, timeout, ABI violation
	msg   string
}

func (o outcome) String() string {
	switch {
	case o.err != nil:
		return "invocation failed: " + oneLine(o.err.Error())
	case o.code != "":
		return fmt.Sprintf("error %s (field %q): %s", o.code, o.field, oneLine(o.msg))
	}
	return string(o.raw)
}

// prepare runs the kind's prepare once, with the scripted judge.
func (kr *kindRun) prepareState(ctx context.Context) (json.RawMessage, string) {
	if !kr.k.Prepare {
		return nil, ""
	}
	kr.prepOnce.Do(func() {
		svc := &services{judge: kr.e.judge}
		res, err := kr.e.p.Prepare(ctx, svc, &abi.PrepareRequest{Kind: kr.k.Name, Metric: "kit_" + kr.k.Name, Config: kr.config, JudgeModel: "conformance-judge"})
		switch {
		case err != nil:
			kr.prepErr = "prepare failed: " + oneLine(err.Error())
		case res.Error != nil:
			kr.prepErr = fmt.Sprintf("prepare returned error %s: %s", res.Error.Code, oneLine(res.Error.Message))
			kr.prepCode = res.Error.Code
		default:
			if verr := kr.e.schemas.validate("prepare_result", res); verr != nil {
				kr.prepErr = "prepare result " + verr.Error()
			}
			kr.prepared = res.State
		}
	})
	return kr.prepared, kr.prepErr
}

// call runs the kind on c through p with svc.
func (kr *kindRun) call(ctx context.Context, p plugin.Plugin, svc plugin.Services, c abi.TestCase) outcome {
	for _, f := range kr.k.RequiredFields {
		c = withFieldIfPresent(c, f)
	}
	if kr.k.Role == abi.RoleNode {
		req := &abi.NodeRequest{Kind: kr.k.Name, NodeID: "kit_node", Config: kr.config, Verdicts: kr.verdicts,
			JudgeModel: "conformance-judge", Case: c}
		res, err := p.Node(ctx, svc, req)
		if err != nil {
			return outcome{err: err}
		}
		return kr.outcomeOf("node_result", res, res.Error)
	}
	prepared, _ := kr.prepareState(ctx)
	req := &abi.MeasureRequest{Kind: kr.k.Name, Metric: "kit_" + kr.k.Name, Config: kr.config, Prepared: prepared,
		Threshold: 0.5, JudgeModel: "conformance-judge", Case: c}
	res, err := p.Measure(ctx, svc, req)
	if err != nil {
		return outcome{err: err}
	}
	return kr.outcomeOf("measure_result", res, res.Error)
}

func (kr *kindRun) outcomeOf(schema string, res any, e *abi.Error) outcome {
	raw, err := json.Marshal(res)
	if err != nil {
		return outcome{err: err}
	}
	if err := kr.e.schemas.validate(schema, raw); err != nil {
		return outcome{err: fmt.Errorf("result %s: %s", err, raw)}
	}
	o := outcome{raw: raw}
	if e != nil {
		o.code, o.field, o.msg = e.Code, e.Field, e.Message
	}
	return o
}

// svc is the services a generated-case call gets: the scripted judge.
func (kr *kindRun) svc() *services { return &services{judge: kr.e.judge} }

func (kr *kindRun) checkPrepare(ctx context.Context, _ *env) (Status, string) {
	state, problem := kr.prepareState(ctx)
	if problem != "" && kr.defaulted && kr.prepCode == abi.CodeInvalidConfig {
		return kr.refusedEmptyConfig(problem)
	}
	if problem != "" {
		return Fail, problem
	}
	return Pass, fmt.Sprintf("state of %d bytes, valid against prepare_result.json", len(state))
}

// checkGoldenRequest feeds the ABI's golden request vector, retargeted
// at this kind and its config (and the golden test case).
func (kr *kindRun) checkGoldenRequest(ctx context.Context, e *env) (Status, string) {
	file := "measure_request.json"
	if kr.k.Role == abi.RoleNode {
		file = "node_request.json"
	}
	var c abi.TestCase
	var probe struct {
		Case abi.TestCase `json:"case"`
	}
	if err := json.Unmarshal(e.schemas.vectors[file], &probe); err != nil {
		return Fail, "golden " + file + ": " + err.Error()
	}
	c = probe.Case
	o := kr.call(ctx, e.p, kr.svc(), c)
	if o.err != nil {
		return Fail, "abi/testdata/" + file + ": " + o.String()
	}
	return Pass, "abi/testdata/" + file + "'s case answered: " + summary(o)
}

// checkCase runs one generated case: no invocation failure, a result
// valid against its schema, and — on the full case — a score or verdict,
// not an error.
func (kr *kindRun) checkCase(c abi.TestCase) func(context.Context, *env) (Status, string) {
	return func(ctx context.Context, e *env) (Status, string) {
		o := kr.call(ctx, e.p, kr.svc(), c)
		if c.ID == "kit-full" && o.err != nil {
			kr.broken = true
		}
		if o.err != nil {
			return Fail, o.String()
		}
		if c.ID == "kit-full" && o.code == abi.CodeInvalidConfig && kr.defaulted {
			return kr.refusedEmptyConfig(o.msg)
		}
		if c.ID == "kit-full" && o.code != "" {
			return Fail, "a case with every field set was answered with " + o.String()
		}
		return Pass, summary(o)
	}
}

// checkMissing removes each required field in turn: the answer must be
// missing_field naming it, never a crash; a required context or
// retrieval_context of blank strings must be missing_field too. A kind that declares none is
// sent a case with only an id, which must not crash it either.
func (kr *kindRun) checkMissing(ctx context.Context, e *env) (Status, string) {
	if len(kr.k.RequiredFields) == 0 {
		o := kr.call(ctx, e.p, kr.svc(), abi.TestCase{ID: "kit-empty"})
		if o.err != nil {
			return Fail, "a case with only an id: " + o.String()
		}
		return Pass, "declares no required fields; a case with only an id was answered: " + summary(o)
	}
	for _, f := range kr.k.RequiredFields {
		o := kr.callRaw(ctx, e.p, kr.svc(), without(fullCase("kit-missing-"+f), f))
		if o.err != nil {
			return Fail, fmt.Sprintf("without %s: %s", f, o.String())
		}
		if o.code != abi.CodeMissingField {
			return Fail, fmt.Sprintf("without %s: want error missing_field, got %s", f, o.String())
		}
		if o.field != "" && o.field != f {
			return Fail, fmt.Sprintf("without %s: missing_field names %q", f, o.field)
		}
	}
	// A list of blank strings is missing too (abi/v1/README.md §8): an
	// SDK that counts items instead of reading them scores an empty context.
	blank := []string{"", " \t\n", "\u00a0\u3000"}
	for _, f := range kr.k.RequiredFields {
		c := fullCase("kit-blank-" + f)
		switch f {
		case abi.FieldContext:
			c.Context = blank
		case abi.FieldRetrievalContext:
			c.RetrievalContext = blank
		default:
			continue
		}
		o := kr.callRaw(ctx, e.p, kr.svc(), c)
		if o.err != nil {
			return Fail, fmt.Sprintf("%s of blank strings: %s", f, o.String())
		}
		if o.code != abi.CodeMissingField {
			return Fail, fmt.Sprintf("%s of blank strings: want error missing_field (white space only is missing), got %s", f, o.String())
		}
	}
	return Pass, fmt.Sprintf("missing_field for each of %s", strings.Join(kr.k.RequiredFields, ", "))
}

// callRaw is call without filling in free-form required fields.
func (kr *kindRun) callRaw(ctx context.Context, p plugin.Plugin, svc plugin.Services, c abi.TestCase) outcome {
	saved := kr.k.RequiredFields
	kr.k.RequiredFields = nil
	defer func() { kr.k.RequiredFields = saved }()
	return kr.call(ctx, p, svc, c)
}

func (kr *kindRun) checkDeterminism(ctx context.Context, e *env) (Status, string) {
	for _, c := range []abi.TestCase{fullCase("kit-full"), unicodeCase()} {
		a := kr.call(ctx, e.p, kr.svc(), c)
		b := kr.call(ctx, e.p, kr.svc(), c)
		if a.err != nil || b.err != nil {
			return Fail, fmt.Sprintf("case %s: %v / %v", c.ID, a, b)
		}
		if !sameJSON(a.raw, b.raw) {
			return Fail, fmt.Sprintf("case %s answered differently twice:\n  %s\n  %s", c.ID, a.raw, b.raw)
		}
	}
	return Pass, "same input twice gave the same output (2 cases)"
}

// checkUnknownFields adds fields the kind cannot know to the case (an
// extra with a nested value): the answer must be what it was without.
func (kr *kindRun) checkUnknownFields(ctx context.Context, e *env) (Status, string) {
	base := kr.call(ctx, e.p, kr.svc(), fullCase("kit-full"))
	c := fullCase("kit-full")
	c.Extra["x_anvil_conformance_unknown"] = json.RawMessage(`{"nested":[1,"two",null,{"deep":true}]}`)
	c.Extra["x_anvil_conformance_number"] = json.RawMessage(`1e300`)
	o := kr.call(ctx, e.p, kr.svc(), c)
	if o.err != nil {
		return Fail, o.String()
	}
	if o.code != base.code {
		return Fail, fmt.Sprintf("with unknown extras: %s; without: %s", o.String(), base.String())
	}
	if sameJSON(o.raw, base.raw) {
		return Pass, "unknown extra fields ignored: same result as without them"
	}
	return Pass, "unknown extra fields tolerated (the result differs; the kind reads extras)"
}

// concurrencyCases are distinct cases for the concurrency check.
func concurrencyCases() []abi.TestCase {
	var cs []abi.TestCase
	for i := 0; i < 8; i++ {
		c := fullCase(fmt.Sprintf("kit-conc-%d", i))
		c.ActualOutput = fmt.Sprintf("%s (variant %d: %s)", c.ActualOutput, i, strings.Repeat("Paris ", i))
		cs = append(cs, c)
	}
	return cs
}

func (kr *kindRun) checkConcurrency(ctx context.Context, e *env) (Status, string) {
	cs := concurrencyCases()
	seq := make([]outcome, len(cs))
	for i, c := range cs {
		seq[i] = kr.call(ctx, e.p, kr.svc(), c)
		if seq[i].err != nil {
			return Fail, fmt.Sprintf("sequential %s: %s", c.ID, seq[i])
		}
	}
	par := make([]outcome, len(cs)*2)
	var wg sync.WaitGroup
	for i := range par {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			par[i] = kr.call(ctx, e.p, kr.svc(), cs[i%len(cs)])
		}(i)
	}
	wg.Wait()
	for i, o := range par {
		want := seq[i%len(cs)]
		if o.err != nil || !sameJSON(o.raw, want.raw) {
			return Fail, fmt.Sprintf("case %s concurrently: %s; sequentially: %s", cs[i%len(cs)].ID, o, want)
		}
	}
	return Pass, fmt.Sprintf("%d concurrent calls across the pool equal the %d sequential ones", len(par), len(cs))
}

// checkAfterTimeout cuts calls short and then requires the next calls —
// on fresh instances, since the host discards a timed-out one — to
// succeed with the same result as before. A kind that asks for the judge
// is cut inside its judge call, so the cut is certain; others are given a
// 1 ms deadline on the large case, and the check is skipped when every
// such call finishes first.
func (kr *kindRun) checkAfterTimeout(ctx context.Context, e *env) (Status, string) {
	base := kr.call(ctx, e.p, kr.svc(), fullCase("kit-full"))
	if base.err != nil {
		return Fail, "baseline: " + base.String()
	}
	cut := 0
	var cutMsg string
	for i := 0; i < 4; i++ {
		cctx, cancel := context.WithCancel(ctx)
		svc := kr.svc()
		c := largeCase()
		if kr.asksJudge {
			svc.onJudge = func(context.Context) { cancel() }
			c = fullCase("kit-full")
		} else {
			var stop context.CancelFunc
			cctx, stop = context.WithTimeout(cctx, time.Millisecond)
			defer stop()
		}
		o := kr.call(cctx, e.p, svc, c)
		cancel()
		if o.err != nil {
			var ae *abi.Error
			if errors.As(o.err, &ae) && ae.Code != abi.CodeTimeout {
				return Fail, "a call cut short failed with " + string(ae.Code) + ", not timeout: " + oneLine(ae.Message)
			}
			cut++
			cutMsg = oneLine(o.err.Error())
		}
	}
	if cut == 0 {
		return Skip, "no call could be cut short (each finished within 1 ms and the kind makes no judge call)"
	}
	// Every instance of the pool at once, and one more.
	n := plugin.Limits{}.WithDefaults().PoolSize + 1
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i] = kr.call(ctx, e.p, kr.svc(), fullCase("kit-full"))
		}(i)
	}
	wg.Wait()
	for _, o := range outs {
		if o.err != nil || !sameJSON(o.raw, base.raw) {
			return Fail, fmt.Sprintf("after %d cut calls: %s; want %s", cut, o, base)
		}
	}
	_ = cutMsg
	return Pass, fmt.Sprintf("%d calls cut short (timeout, instance discarded); the next %d calls succeeded with the same result", cut, n)
}

// checkJudgeGranted runs the full case with the judge granted: the
// batches must be well formed and the kind must use the replies.
func (kr *kindRun) checkJudgeGranted(ctx context.Context, e *env) (Status, string) {
	svc := kr.svc()
	o := kr.call(ctx, e.p, svc, fullCase("kit-full"))
	if o.err != nil {
		return Fail, o.String()
	}
	if err := svc.checkBatchShapes(); err != nil {
		return Fail, "judge batch: " + err.Error()
	}
	b, r := svc.requests()
	if o.code != "" {
		return Fail, fmt.Sprintf("with the judge granted and answering (%d batches, %d requests): %s", b, r, o)
	}
	embeds := ""
	if n := svc.embedRequests(); n > 0 {
		embeds = fmt.Sprintf(" (%d of them embed requests)", n)
	}
	return Pass, fmt.Sprintf("%d batches, %d judge requests%s, well formed; result %s", b, r, embeds, summary(o))
}

// loadWith loads a second copy of the plugin under other grants/limits.
func (kr *kindRun) loadWith(ctx context.Context, opts plugin.Options) (plugin.Plugin, error) {
	opts.Limits.PoolSize = 1
	return kr.e.load(ctx, opts)
}

// expectRefusal runs the full case through a copy of the plugin whose
// judge is refused: the kind must return an error (any code; the host's
// code preferred), not crash and not invent a score.
func (kr *kindRun) expectRefusal(ctx context.Context, opts plugin.Options, want abi.Code, what string) (Status, string) {
	p, err := kr.loadWith(ctx, opts)
	if err != nil {
		return Fail, "load: " + oneLine(err.Error())
	}
	defer p.Close(context.WithoutCancel(ctx))
	svc := kr.svc()
	o := kr.call(ctx, p, svc, fullCase("kit-full"))
	b, _ := svc.requests()
	switch {
	case o.err != nil:
		return Fail, what + ": " + o.String()
	case o.code == "":
		return Fail, fmt.Sprintf("%s, the kind still returned a result without error: %s", what, o.raw)
	case o.code != want:
		return Pass, fmt.Sprintf("%s: error %s (propagating %s would tell the operator why)", what, o.code, want)
	}
	_ = b
	return Pass, fmt.Sprintf("%s: error %s, no crash", what, o.code)
}

func (kr *kindRun) checkJudgeDenied(ctx context.Context, _ *env) (Status, string) {
	if _, r := kr.granted(ctx); r == 0 {
		return Skip, "the kind made no judge call on the full case"
	}
	return kr.expectRefusal(ctx, plugin.Options{}, abi.CodeCapability, "judge not granted")
}

func (kr *kindRun) checkTokenBudget(ctx context.Context, _ *env) (Status, string) {
	if _, r := kr.granted(ctx); r == 0 {
		return Skip, "the kind made no judge call on the full case"
	}
	return kr.expectRefusal(ctx, plugin.Options{Grants: plugin.Grants{Judge: true}, Limits: plugin.Limits{MaxJudgeTokens: 1}},
		abi.CodeBudget, "max_judge_tokens 1 (first batch refused)")
}

func (kr *kindRun) checkCallBudget(ctx context.Context, _ *env) (Status, string) {
	_, r := kr.granted(ctx)
	if r < 2 {
		return Skip, fmt.Sprintf("the kind made %d judge request(s) on the full case; a budget of 1 is not reached", r)
	}
	return kr.expectRefusal(ctx, plugin.Options{Grants: plugin.Grants{Judge: true}, Limits: plugin.Limits{MaxJudgeCalls: 1}},
		abi.CodeBudget, fmt.Sprintf("max_judge_calls 1 (the kind makes %d)", r))
}

// granted counts the judge use of the full case with the judge granted.
func (kr *kindRun) granted(ctx context.Context) (batches, requests int) {
	svc := kr.svc()
	kr.call(ctx, kr.e.p, svc, fullCase("kit-full"))
	return svc.requests()
}

// checkNotAsked: a plugin that does not ask for the judge, granted it
// anyway, must never reach it — and never call anvil_judge at all: the
// host's capability_denied in its output shows that it tried.
func (kr *kindRun) checkNotAsked(ctx context.Context, e *env) (Status, string) {
	svc := kr.svc()
	o := kr.call(ctx, e.p, svc, fullCase("kit-full"))
	if o.err != nil {
		return Fail, o.String()
	}
	if _, r := svc.requests(); r > 0 {
		return Fail, fmt.Sprintf("the plugin does not ask for the judge but %d judge requests reached the host", r)
	}
	if o.code == abi.CodeCapability || bytes.Contains(o.raw, []byte(`"`+abi.CodeCapability+`"`)) {
		return Fail, "the plugin does not ask for the judge capability but called anvil_judge (the host answered capability_denied): ask for \"judge\" in the descriptor"
	}
	return Pass, "no judge call"
}

// summary is a short form of a successful outcome.
func summary(o outcome) string {
	if o.code != "" {
		return o.String()
	}
	var r struct {
		Score   *float64 `json:"score"`
		Verdict string   `json:"verdict"`
		Output  string   `json:"output"`
		Reason  string   `json:"reason"`
	}
	_ = json.Unmarshal(o.raw, &r)
	var parts []string
	if r.Score != nil {
		parts = append(parts, fmt.Sprintf("score %.4g", *r.Score))
	}
	if r.Verdict != "" {
		parts = append(parts, "verdict "+r.Verdict)
	}
	if r.Output != "" {
		parts = append(parts, fmt.Sprintf("output of %d bytes", len(r.Output)))
	}
	if len(parts) == 0 {
		return "answered"
	}
	return strings.Join(parts, ", ")
}

// sameJSON compares two JSON documents after parsing, ignoring latency.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(stripLatency(x), stripLatency(y))
}

func stripLatency(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, vv := range t {
			if k == "latency_ms" {
				delete(t, k)
				continue
			}
			t[k] = stripLatency(vv)
		}
	case []any:
		for i := range t {
			t[i] = stripLatency(t[i])
		}
	}
	return v
}

// withFieldIfPresent gives a free-form required field a value.
func withFieldIfPresent(c abi.TestCase, f string) abi.TestCase { return withField(c, f) }
