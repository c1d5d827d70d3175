package dag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentanvil/anvil/abi"
)

// Runner runs nodes and child metrics on the current case. The engine
// implements it over the loaded plugins and the judge; it must be safe for
// concurrent calls.
type Runner interface {
	// RunNode executes one node (any kind except metric leaves) on the
	// current case. inputs are the outputs of the node's data parents, in
	// configuration order; verdicts are the verdicts it may answer (nil for
	// nodes that produce output).
	RunNode(ctx context.Context, n *Node, inputs []abi.NodeInput, verdicts []string) (NodeOutcome, error)
	// RunMetric runs a configured child metric on the current case.
	RunMetric(ctx context.Context, metric string) (MetricOutcome, error)
}

// DefaultConcurrency is how many nodes (and child metrics) of one
// evaluation run at once by default.
const DefaultConcurrency = 4

// Option tunes Evaluate.
type Option func(*options)

type options struct {
	concurrency int
	// completed, if set, is called by the scheduling goroutine after it
	// handled a completion (tests synchronise on it).
	completed func(node, metric string)
}

// WithConcurrency caps how many nodes and child metrics of one evaluation
// run at once (n < 1 means 1).
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrency = max(n, 1) }
}

// Evaluate walks the graph for the current case. Data edges (children) are
// AND, control edges (then) are OR: a node runs once, when every data
// parent has produced output and, if it has control parents, at least one
// of them chose a verdict leading to it. Nodes that can no longer run are
// dead and cost nothing. Independent nodes run concurrently.
//
// The score aggregates the fired leaves, sorted by node id then verdict, so
// the same verdicts give the same Result whatever the scheduling. On a node
// error Evaluate starts nothing new, waits for the running nodes, and
// returns what was recorded with the error (a *NodeError, or several
// joined). No fired leaf is an error too.
func Evaluate(ctx context.Context, g *Graph, r Runner, opts ...Option) (*Result, error) {
	if g == nil || len(g.Nodes) == 0 {
		return nil, errors.New("dag: evaluate: empty graph")
	}
	o := options{concurrency: DefaultConcurrency}
	for _, opt := range opts {
		opt(&o)
	}
	s := newRun(ctx, g, r, o)
	start := time.Now()
	s.loop()
	res := s.result()
	res.WallMS = float64(time.Since(start).Microseconds()) / 1000
	err := s.finish(res)
	if err != nil {
		res.Score = 0
		res.Error = err.Error()
	}
	return res, err
}

type nodeState uint8

const (
	pending nodeState = iota
	queued
	running
	done
	failed
	dead
)

func (s nodeState) String() string {
	return [...]string{"pending", "queued", "running", "done", "failed", "dead"}[s]
}

type job struct {
	node   *Node  // a node run, or
	metric string // a child metric run
}

type completion struct {
	job
	nodeOut   NodeOutcome
	metricOut MetricOutcome
	err       error
	elapsed   time.Duration
}

type metricRun struct {
	started, finished bool
	ok                bool
	out               MetricOutcome
	leaves            []int // indexes into run.leaves waiting for the score
	rec               *MetricRecord
}

type pendingLeaf struct {
	Leaf
	resolved bool
}

type run struct {
	ctx context.Context
	g   *Graph
	r   Runner
	o   options

	state    []nodeState
	dataLeft []int  // data parents not yet done
	dataDead []bool // a data parent is dead or failed
	ctrlLeft []int  // control parents not yet resolved
	fired    []bool // a control parent chose a verdict leading here
	ctrlKids [][]*Node
	outcome  []NodeOutcome
	records  []*NodeRecord

	queue    []job
	inflight int
	results  chan completion
	stopping bool
	ctxErr   error

	leaves  []pendingLeaf
	metrics map[string]*metricRun
	errs    []orderedErr
}

type orderedErr struct {
	order int
	err   error
}

func newRun(ctx context.Context, g *Graph, r Runner, o options) *run {
	n := len(g.Nodes)
	s := &run{
		ctx: ctx, g: g, r: r, o: o,
		state:    make([]nodeState, n),
		dataLeft: make([]int, n),
		dataDead: make([]bool, n),
		ctrlLeft: make([]int, n),
		fired:    make([]bool, n),
		ctrlKids: make([][]*Node, n),
		outcome:  make([]NodeOutcome, n),
		records:  make([]*NodeRecord, n),
		results:  make(chan completion),
		metrics:  map[string]*metricRun{},
	}
	for _, nd := range g.Nodes {
		s.dataLeft[nd.index] = len(nd.DataParents)
		s.ctrlLeft[nd.index] = len(nd.ControlParents)
		for _, vd := range nd.Spec.Verdicts {
			if t := nd.Then[vd.Key]; t != nil && !slices.Contains(s.ctrlKids[nd.index], t) {
				s.ctrlKids[nd.index] = append(s.ctrlKids[nd.index], t)
			}
		}
	}
	isRoot := map[*Node]bool{}
	for _, rt := range g.Roots {
		isRoot[rt] = true
	}
	for _, nd := range g.order {
		switch {
		case isRoot[nd]:
			s.state[nd.index] = queued
			s.queue = append(s.queue, job{node: nd})
		case !hasParents(nd):
			s.kill(nd) // not a root and nothing leads here: never runs
		}
	}
	return s
}

// loop launches jobs and handles completions until nothing runs.
func (s *run) loop() {
	ctxDone := s.ctx.Done()
	for {
		s.launch()
		if s.inflight == 0 {
			return
		}
		select {
		case c := <-s.results:
			s.inflight--
			s.complete(c)
			if s.o.completed != nil {
				var id string
				if c.node != nil {
					id = c.node.ID
				}
				s.o.completed(id, c.metric)
			}
		case <-ctxDone:
			ctxDone = nil
			s.ctxErr = s.ctx.Err()
			s.stopping = true
		}
	}
}

func (s *run) launch() {
	if s.stopping {
		return
	}
	if err := s.ctx.Err(); err != nil {
		s.ctxErr, s.stopping = err, true
		return
	}
	for s.inflight < s.o.concurrency && len(s.queue) > 0 {
		j := s.queue[0]
		s.queue = s.queue[1:]
		s.inflight++
		if j.node != nil {
			s.state[j.node.index] = running
			go s.runNode(j.node, s.inputs(j.node))
		} else {
			go s.runMetric(j.metric)
		}
	}
}

func (s *run) inputs(n *Node) []abi.NodeInput {
	if len(n.DataParents) == 0 {
		return nil
	}
	in := make([]abi.NodeInput, len(n.DataParents))
	for i, p := range n.DataParents {
		in[i] = abi.NodeInput{NodeID: p.ID, Label: p.Label, Output: s.outcome[p.index].Output}
	}
	return in
}

func (s *run) runNode(n *Node, inputs []abi.NodeInput) {
	c := completion{job: job{node: n}}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			c.err = fmt.Errorf("runner panicked: %v", p)
		}
		c.elapsed = time.Since(start)
		s.results <- c
	}()
	c.nodeOut, c.err = s.r.RunNode(s.ctx, n, inputs, slices.Clone(n.Verdicts))
}

func (s *run) runMetric(name string) {
	c := completion{job: job{metric: name}}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			c.err = fmt.Errorf("runner panicked: %v", p)
		}
		c.elapsed = time.Since(start)
		s.results <- c
	}()
	c.metricOut, c.err = s.r.RunMetric(s.ctx, name)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *run) complete(c completion) {
	if c.node != nil {
		s.completeNode(c)
	} else {
		s.completeMetric(c)
	}
}

func (s *run) completeNode(c completion) {
	n, out := c.node, c.nodeOut
	if out.LatencyMS == 0 {
		out.LatencyMS = ms(c.elapsed)
	}
	rec := &NodeRecord{ID: n.ID, Kind: n.Kind, Verdict: out.Verdict, Reason: out.Reason,
		Output: out.Output, Details: out.Details, Usage: out.Usage}
	s.records[n.index] = rec
	err := c.err
	switch {
	case err != nil:
	case out.Error != nil:
		err = out.Error
	case !n.Class.Produces() && !slices.Contains(n.Verdicts, out.Verdict):
		err = fmt.Errorf("verdict %q is not one of %s", out.Verdict, quoteAll(n.Verdicts))
	}
	if err != nil {
		rec.Error = err.Error()
		s.state[n.index] = failed
		s.fail(n.topo, &NodeError{NodeID: n.ID, Err: err})
		return
	}
	if n.Class.Produces() {
		rec.Verdict = "" // a task's verdict means nothing
		out.Verdict = ""
	} else {
		rec.Output = ""
	}
	s.outcome[n.index] = out
	s.state[n.index] = done
	for _, ch := range n.Children {
		s.dataLeft[ch.index]--
		s.consider(ch)
	}
	if n.Class.Produces() {
		return
	}
	vd, _ := n.Outcome(out.Verdict)
	if t := n.Then[vd.Key]; t != nil {
		s.fired[t.index] = true
	}
	for _, ch := range s.ctrlKids[n.index] {
		s.ctrlLeft[ch.index]--
		s.consider(ch)
	}
	switch {
	case vd.Score != nil:
		p := *vd.Score
		s.leaves = append(s.leaves, pendingLeaf{resolved: true,
			Leaf: Leaf{NodeID: n.ID, Verdict: vd.Key, Score: p / 10, Points: &p}})
	case vd.Metric != "":
		s.leaves = append(s.leaves, pendingLeaf{Leaf: Leaf{NodeID: n.ID, Verdict: vd.Key, Metric: vd.Metric}})
		s.metricLeaf(len(s.leaves) - 1)
	}
}

// metricLeaf attaches a fired metric leaf to its metric's run, starting it
// the first time.
func (s *run) metricLeaf(i int) {
	name := s.leaves[i].Metric
	m := s.metrics[name]
	if m == nil {
		m = &metricRun{}
		s.metrics[name] = m
	}
	m.leaves = append(m.leaves, i)
	switch {
	case m.finished:
		s.resolveMetric(m)
	case !m.started:
		m.started = true
		s.queue = append(s.queue, job{metric: name})
	}
}

func (s *run) completeMetric(c completion) {
	m := s.metrics[c.metric]
	out := c.metricOut
	if out.LatencyMS == 0 {
		out.LatencyMS = ms(c.elapsed)
	}
	m.finished, m.out = true, out
	m.rec = &MetricRecord{Metric: c.metric, Score: out.Score, Success: out.Success, Reason: out.Reason,
		ScoreMode: out.ScoreMode, Details: out.Details, Usage: out.Usage}
	err := c.err
	switch {
	case err != nil:
	case out.Error != nil:
		err = out.Error
	case math.IsNaN(out.Score) || out.Score < 0 || out.Score > 1:
		err = fmt.Errorf("score %v is outside [0,1]", out.Score)
	}
	if err != nil {
		m.rec.Error = err.Error()
		first := s.leaves[m.leaves[0]]
		s.fail(len(s.g.Nodes)+s.g.Node(first.NodeID).topo, &NodeError{NodeID: first.NodeID, Metric: c.metric, Err: err})
		return
	}
	m.ok = true
	s.resolveMetric(m)
}

func (s *run) resolveMetric(m *metricRun) {
	if !m.ok {
		return
	}
	for _, i := range m.leaves {
		s.leaves[i].Score = m.out.Score
		s.leaves[i].resolved = true
	}
}

func (s *run) fail(order int, err error) {
	s.errs = append(s.errs, orderedErr{order, err})
	s.stopping = true
}

// consider moves a pending node to queued or dead once its parents allow.
func (s *run) consider(n *Node) {
	i := n.index
	if s.state[i] != pending {
		return
	}
	switch {
	case s.dataDead[i]:
		s.kill(n)
	case len(n.ControlParents) > 0 && !s.fired[i] && s.ctrlLeft[i] == 0:
		s.kill(n)
	case s.dataLeft[i] == 0 && (len(n.ControlParents) == 0 || s.fired[i]):
		s.state[i] = queued
		s.queue = append(s.queue, job{node: n})
	}
}

// kill marks n dead and resolves its edges: its data children die, its
// control children lose a parent.
func (s *run) kill(n *Node) {
	s.state[n.index] = dead
	for _, ch := range n.Children {
		s.dataDead[ch.index] = true
		s.consider(ch)
	}
	for _, ch := range s.ctrlKids[n.index] {
		s.ctrlLeft[ch.index]--
		s.consider(ch)
	}
}

// result assembles what was recorded.
func (s *run) result() *Result {
	res := &Result{Aggregate: s.g.Aggregate, Path: []string{}, Leaves: []Leaf{}, Nodes: []NodeRecord{}}
	for _, n := range s.g.order {
		if rec := s.records[n.index]; rec != nil {
			res.Path = append(res.Path, n.ID)
			res.Nodes = append(res.Nodes, *rec)
			res.Totals.Add(rec.Usage)
		}
	}
	names := make([]string, 0, len(s.metrics))
	for name, m := range s.metrics {
		if m.rec != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		rec := s.metrics[name].rec
		res.Metrics = append(res.Metrics, *rec)
		res.Totals.Add(rec.Usage)
	}
	for _, l := range s.leaves {
		if l.resolved {
			res.Leaves = append(res.Leaves, l.Leaf)
		}
	}
	slices.SortFunc(res.Leaves, func(a, b Leaf) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.Verdict, b.Verdict))
	})
	if len(res.Leaves) > 0 {
		res.Score = aggregate(s.g.Aggregate, res.Leaves)
	}
	res.Reason = pathReason(s.g, res)
	return res
}

// aggregate combines leaf scores in their (sorted) order.
func aggregate(how string, leaves []Leaf) float64 {
	acc := leaves[0].Score
	for _, l := range leaves[1:] {
		switch how {
		case AggregateMax:
			acc = max(acc, l.Score)
		case AggregateMean:
			acc += l.Score
		default:
			acc = min(acc, l.Score)
		}
	}
	if how == AggregateMean {
		acc /= float64(len(leaves))
	}
	return acc
}

// finish returns the evaluation's error, if any.
func (s *run) finish(res *Result) error {
	if len(s.errs) > 0 || s.ctxErr != nil {
		slices.SortStableFunc(s.errs, func(a, b orderedErr) int { return cmp.Compare(a.order, b.order) })
		errs := make([]error, 0, len(s.errs)+1)
		for _, e := range s.errs {
			errs = append(errs, e.err)
		}
		if s.ctxErr != nil {
			errs = append(errs, fmt.Errorf("dag: evaluation stopped: %w", s.ctxErr))
		}
		if len(errs) == 1 {
			return errs[0]
		}
		return errors.Join(errs...)
	}
	var stuck []string
	for _, n := range s.g.order {
		if st := s.state[n.index]; st != done && st != dead {
			stuck = append(stuck, fmt.Sprintf("%s (%s)", n.ID, st))
		}
	}
	if len(stuck) > 0 { // cannot happen in a validated graph
		return fmt.Errorf("dag: internal error: nodes left unresolved: %s", strings.Join(stuck, ", "))
	}
	if len(res.Leaves) == 0 {
		return fmt.Errorf("dag: no leaf fired: %s", s.describe())
	}
	return nil
}

// describe states the graph after a walk: what ran with which verdict,
// what is dead.
func (s *run) describe() string {
	var ran, deadIDs []string
	for _, n := range s.g.order {
		switch s.state[n.index] {
		case done:
			if n.Class.Produces() {
				ran = append(ran, n.ID)
			} else {
				ran = append(ran, n.ID+"="+s.outcome[n.index].Verdict)
			}
		case dead:
			deadIDs = append(deadIDs, n.ID)
		}
	}
	msg := "ran " + orNone(ran)
	msg += "; dead (not reached): " + orNone(deadIDs)
	return msg
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
