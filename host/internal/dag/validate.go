package dag

import (
	"container/heap"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Env is what Validate checks a spec against.
type Env struct {
	// NodeKinds are the node kinds the loaded plugins provide, by name,
	// including the built-ins task, binary and choice.
	NodeKinds map[string]abi.KindDescriptor
	// Metrics are the configured metric names usable as child metrics (the
	// dag's own name excluded).
	Metrics map[string]bool
	// Self is the dag metric's own name.
	Self string
}

// binaryVerdicts are the verdicts of a binary node, sorted.
var binaryVerdicts = []string{"false", "true"}

// Validate checks a spec against the loaded node kinds and configured
// metrics and builds its Graph. The error is an *Error listing every
// problem found, each naming the node ids involved; warnings never stop a
// graph from being built. Beyond the structure, every node the roots lead
// to must be able to run, and every verdict must be able to lead to a
// score (a scored verdict or a child metric) in some case; see scored.
func Validate(spec *Spec, env Env) (*Graph, []string, error) {
	if spec == nil {
		return nil, nil, &Error{Problems: []string{"no dag configuration"}}
	}
	v := &validator{spec: spec, env: env, p: problems{file: spec.File}, byID: map[string]*Node{}}
	v.settings()
	v.nodes()
	v.edges()
	cyclic := v.cycles()
	v.roots()
	v.reach()
	v.inputs()
	if len(v.p.list) == 0 && !cyclic {
		v.scored()
	}
	if err := v.p.err(); err != nil {
		return nil, v.warnings, err
	}
	if cyclic { // cycles always add a problem; belt and braces
		return nil, v.warnings, &Error{Problems: []string{"cycle in graph"}}
	}
	g := &Graph{Spec: spec, Aggregate: v.aggregate, Reason: v.reason, Nodes: v.list, Roots: v.rootList, byID: v.byID}
	g.order = topoOrder(v.list)
	for i, n := range g.order {
		n.topo = i
	}
	return g, v.warnings, nil
}

type validator struct {
	spec     *Spec
	env      Env
	p        problems
	warnings []string

	aggregate, reason string
	list              []*Node
	byID              map[string]*Node
	unknownKind       map[*Node]bool
	rootList          []*Node
	explicitRoots     bool
	reached           map[*Node]bool // from the roots, along any edge
}

func (v *validator) warn(line int, id, format string, args ...any) {
	w := problems{file: v.spec.File}
	w.add(line, id, format, args...)
	v.warnings = append(v.warnings, w.list...)
}

func (v *validator) settings() {
	switch v.spec.Aggregate {
	case "":
		v.aggregate = AggregateMin
	case AggregateMin, AggregateMean, AggregateMax:
		v.aggregate = v.spec.Aggregate
	default:
		v.p.add(v.spec.Line, "", "unknown aggregate %q (want min, mean or max)", v.spec.Aggregate)
	}
	switch v.spec.Reason {
	case "":
		v.reason = ReasonPath
	case ReasonPath, ReasonJudge:
		v.reason = v.spec.Reason
	default:
		v.p.add(v.spec.Line, "", "unknown reason %q (want path or judge)", v.spec.Reason)
	}
	if len(v.spec.Nodes) == 0 {
		v.p.add(v.spec.Line, "", "no nodes")
	}
}

// nodes checks each node on its own: id, kind, fields, verdicts.
func (v *validator) nodes() {
	v.unknownKind = map[*Node]bool{}
	for i := range v.spec.Nodes {
		ns := &v.spec.Nodes[i]
		id := ns.ID
		switch {
		case id == "":
			v.p.add(ns.Line, fmt.Sprintf("nodes[%d]", i), "missing id")
			continue
		case strings.TrimSpace(id) != id:
			v.p.add(ns.Line, id, "id has leading or trailing spaces")
		}
		if prev, dup := v.byID[id]; dup {
			v.p.add(ns.Line, id, "duplicate id (first defined %s)", lineRef(prev.Spec.Line))
			continue
		}
		n := &Node{ID: id, Kind: ns.Kind, Spec: ns, Label: ns.OutputLabel, index: len(v.list), Then: map[string]*Node{}}
		if n.Label == "" {
			n.Label = id
		}
		v.byID[id] = n
		v.list = append(v.list, n)
		v.kind(n)
		v.fields(n)
		v.verdicts(n)
	}
}

func lineRef(line int) string {
	if line > 0 {
		return fmt.Sprintf("at line %d", line)
	}
	return "earlier"
}

func (v *validator) kind(n *Node) {
	ns := n.Spec
	desc, ok := v.env.NodeKinds[ns.Kind]
	switch {
	case ns.Kind == "":
		v.p.add(ns.Line, n.ID, "missing kind")
		v.unknownKind[n] = true
	case !ok:
		v.p.add(ns.Line, n.ID, "kind %q is not provided by any loaded plugin", ns.Kind)
		v.unknownKind[n] = true
	case desc.Role != "" && desc.Role != abi.RoleNode:
		v.p.add(ns.Line, n.ID, "kind %q is a %s kind, not a node kind", ns.Kind, desc.Role)
		v.unknownKind[n] = true
	}
	n.Descriptor = desc
	switch ns.Kind {
	case KindTask:
		n.Class = ClassTask
	case KindBinary:
		n.Class = ClassBinary
		n.Verdicts = slices.Clone(binaryVerdicts)
	case KindChoice:
		n.Class = ClassChoice
		n.Verdicts = ns.Verdicts.Keys()
		sort.Strings(n.Verdicts)
	default:
		switch {
		case len(desc.Verdicts) > 0:
			n.Class = ClassCode
			n.Verdicts = slices.Clone(desc.Verdicts)
		case v.unknownKind[n] && len(ns.Verdicts) > 0:
			n.Class = ClassCode // guess, to keep other messages relevant
		default:
			n.Class = ClassCodeTask
		}
	}
}

// fields checks which node-level fields the node's class allows or needs.
func (v *validator) fields(n *Node) {
	ns := n.Spec
	not := func(set bool, field, why string) {
		if set {
			v.p.add(ns.Line, n.ID, "%s nodes take no %s%s", n.Class, field, why)
		}
	}
	switch n.Class {
	case ClassTask:
		if strings.TrimSpace(ns.Instructions) == "" {
			v.p.add(ns.Line, n.ID, "task node needs instructions")
		}
		not(ns.Criteria != "", "criteria", " (use instructions)")
	case ClassCodeTask:
		not(ns.Instructions != "", "instructions", " (put settings in config)")
		not(ns.Criteria != "", "criteria", " (put settings in config)")
	case ClassBinary, ClassChoice:
		if strings.TrimSpace(ns.Criteria) == "" {
			v.p.add(ns.Line, n.ID, "%s node needs criteria", n.Class)
		}
		not(ns.Instructions != "", "instructions", " (use criteria)")
	case ClassCode:
		not(ns.Instructions != "", "instructions", " (put settings in config)")
		not(ns.Criteria != "", "criteria", " (put settings in config)")
	}
	if n.Class.Produces() {
		if len(ns.Verdicts) > 0 {
			v.p.add(ns.Line, n.ID, "%s node produces output and takes no verdicts (its children read the output; decide in a child node)", ns.Kind)
		}
		if len(ns.Children) == 0 {
			v.p.add(ns.Line, n.ID, "%s node has no children: its output goes nowhere (dead end)", ns.Kind)
		}
	} else {
		not(ns.OutputLabel != "", "output_label", " (they decide, they produce no output)")
		if len(ns.Children) > 0 {
			v.p.add(ns.Line, n.ID, "decision node (%s) has children %s: decision nodes lead on through verdicts (then), not children",
				ns.Kind, strings.Join(ns.Children, ", "))
		}
	}
	for i, f := range ns.Params {
		if strings.TrimSpace(f) == "" {
			v.p.add(ns.Line, n.ID, "params[%d] is empty", i)
		}
	}
}

// verdicts checks a decision node's verdict set and each outcome.
func (v *validator) verdicts(n *Node) {
	ns := n.Spec
	if n.Class.Produces() {
		return
	}
	first := map[string]int{}
	for _, vd := range ns.Verdicts {
		line := vd.Line
		if line == 0 {
			line = ns.Line
		}
		prev, dup := first[vd.Key]
		switch {
		case vd.Key == "":
			v.p.add(line, n.ID, "empty verdict")
		case dup:
			v.p.add(line, n.ID, "duplicate verdict %q after trimming spaces (first %s)", vd.Key, lineRef(prev))
		default:
			first[vd.Key] = line
		}
		v.outcome(n, vd, line)
	}
	switch n.Class {
	case ClassBinary:
		v.verdictSet(n, binaryVerdicts, "binary node")
	case ClassChoice:
		switch len(ns.Verdicts) {
		case 0:
			v.p.add(ns.Line, n.ID, "choice node needs at least one verdict")
		case 1:
			v.warn(ns.Line, n.ID, "choice node has one verdict: the judge has no choice")
		}
	case ClassCode:
		if !v.unknownKind[n] {
			v.verdictSet(n, n.Descriptor.Verdicts, fmt.Sprintf("kind %q", ns.Kind))
		}
	}
}

// verdictSet requires ns's verdict keys to be exactly want.
func (v *validator) verdictSet(n *Node, want []string, who string) {
	have := map[string]bool{}
	for _, vd := range n.Spec.Verdicts {
		have[vd.Key] = true
	}
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
	}
	var missing, extra []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, fmt.Sprintf("%q", w))
		}
	}
	for _, vd := range n.Spec.Verdicts {
		if !wantSet[vd.Key] && vd.Key != "" {
			extra = append(extra, fmt.Sprintf("%q", vd.Key))
		}
	}
	set := quoteAll(want)
	if len(missing) > 0 {
		v.p.add(n.Spec.Line, n.ID, "%s needs exactly one verdict for each of %s: missing %s", who, set, strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		v.p.add(n.Spec.Line, n.ID, "%s has verdicts %s: unknown verdict %s", who, set, strings.Join(extra, ", "))
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func (v *validator) outcome(n *Node, vd Verdict, line int) {
	set := 0
	if vd.Score != nil {
		set++
	}
	if vd.Then != "" {
		set++
	}
	if vd.Metric != "" {
		set++
	}
	if set != 1 {
		v.p.add(line, n.ID, "verdict %q: an outcome is exactly one of score, then, metric (got %d)", vd.Key, set)
	}
	if vd.Score != nil {
		s := *vd.Score
		if math.IsNaN(s) || s < 0 || s > 10 {
			v.p.add(line, n.ID, "verdict %q: score %v is outside 0–10", vd.Key, s)
		}
	}
	if vd.Metric != "" {
		switch {
		case vd.Metric == v.env.Self:
			v.p.add(line, n.ID, "verdict %q: child metric %q is this dag metric itself", vd.Key, vd.Metric)
		case !v.env.Metrics[vd.Metric]:
			v.p.add(line, n.ID, "verdict %q: unknown child metric %q", vd.Key, vd.Metric)
		}
	}
}

// edges resolves children and then references.
func (v *validator) edges() {
	for _, n := range v.list {
		ns := n.Spec
		seen := map[string]bool{}
		for _, c := range ns.Children {
			child, ok := v.byID[c]
			switch {
			case !ok:
				v.p.add(ns.Line, n.ID, "children: unknown node id %q", c)
			case seen[c]:
				v.p.add(ns.Line, n.ID, "children: %q listed twice", c)
			default:
				seen[c] = true
				n.Children = append(n.Children, child)
				child.DataParents = append(child.DataParents, n)
			}
		}
		for _, vd := range ns.Verdicts {
			if vd.Then == "" {
				continue
			}
			target, ok := v.byID[vd.Then]
			if !ok {
				v.p.add(max(vd.Line, ns.Line), n.ID, "verdict %q: then: unknown node id %q", vd.Key, vd.Then)
				continue
			}
			n.Then[vd.Key] = target
			if !slices.Contains(target.ControlParents, n) {
				target.ControlParents = append(target.ControlParents, n)
			}
		}
	}
}

// successors lists the nodes n leads to (children, then verdict targets), in
// configuration order, each once.
func successors(n *Node) []*Node {
	out := slices.Clone(n.Children)
	for _, vd := range n.Spec.Verdicts {
		if t := n.Then[vd.Key]; t != nil && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func hasParents(n *Node) bool { return len(n.DataParents)+len(n.ControlParents) > 0 }

// cycles reports every strongly connected component with a cycle, printing
// one cycle through it.
func (v *validator) cycles() bool {
	index := map[*Node]int{}
	low := map[*Node]int{}
	on := map[*Node]bool{}
	var stack []*Node
	var sccs [][]*Node
	next := 0
	var strong func(n *Node)
	strong = func(n *Node) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		on[n] = true
		for _, s := range successors(n) {
			if _, seen := index[s]; !seen {
				strong(s)
				low[n] = min(low[n], low[s])
			} else if on[s] {
				low[n] = min(low[n], index[s])
			}
		}
		if low[n] == index[n] {
			var comp []*Node
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[top] = false
				comp = append(comp, top)
				if top == n {
					break
				}
			}
			sccs = append(sccs, comp)
		}
	}
	for _, n := range v.list {
		if _, seen := index[n]; !seen {
			strong(n)
		}
	}
	var found [][]*Node
	for _, comp := range sccs {
		if len(comp) == 1 && !slices.Contains(successors(comp[0]), comp[0]) {
			continue
		}
		found = append(found, comp)
	}
	sort.Slice(found, func(i, j int) bool { return minIndex(found[i]) < minIndex(found[j]) })
	for _, comp := range found {
		cyc := cycleIn(comp)
		ids := make([]string, len(cyc))
		for i, n := range cyc {
			ids[i] = n.ID
		}
		v.p.add(cyc[0].Spec.Line, "", "cycle: %s", strings.Join(ids, " -> "))
	}
	return len(found) > 0
}

func minIndex(comp []*Node) int {
	m := comp[0].index
	for _, n := range comp {
		m = min(m, n.index)
	}
	return m
}

// cycleIn returns a shortest cycle through the component's first node in
// configuration order, closing on that node.
func cycleIn(comp []*Node) []*Node {
	in := map[*Node]bool{}
	start := comp[0]
	for _, n := range comp {
		in[n] = true
		if n.index < start.index {
			start = n
		}
	}
	prev := map[*Node]*Node{}
	queue := []*Node{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range successors(n) {
			if !in[s] {
				continue
			}
			if s == start {
				path := []*Node{start}
				for at := n; at != start; at = prev[at] {
					path = append(path, at)
				}
				path = append(path, start)
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[s]; !seen {
				prev[s] = n
				queue = append(queue, s)
			}
		}
	}
	return []*Node{start, start} // unreachable for a real component
}

// roots resolves the root set and checks it.
func (v *validator) roots() {
	if len(v.spec.Roots) > 0 {
		v.explicitRoots = true
		seen := map[string]bool{}
		for _, id := range v.spec.Roots {
			n, ok := v.byID[id]
			switch {
			case !ok:
				v.p.add(v.spec.Line, "", "roots: unknown node id %q", id)
			case seen[id]:
				v.p.add(v.spec.Line, "", "roots: %q listed twice", id)
			default:
				seen[id] = true
				v.rootList = append(v.rootList, n)
			}
		}
	} else {
		for _, n := range v.list {
			if !hasParents(n) {
				v.rootList = append(v.rootList, n)
			}
		}
	}
	if len(v.rootList) == 0 {
		if len(v.list) > 0 && len(v.spec.Roots) == 0 {
			v.p.add(v.spec.Line, "", "no root: every node has a parent")
		}
		return
	}
	if len(v.rootList) > 1 {
		ids := nodeIDs(v.rootList)
		for _, r := range v.rootList {
			if !r.Class.Produces() && !v.unknownKind[r] {
				v.p.add(r.Spec.Line, r.ID, "only task nodes can be one of several roots (roots: %s), and %q is a %s node; make it the single root or a child of a task",
					strings.Join(ids, ", "), r.ID, r.Kind)
			}
		}
	}
	if !v.explicitRoots {
		return
	}
	for _, r := range v.rootList {
		if !hasParents(r) {
			continue
		}
		reported := false
		for _, other := range v.rootList {
			if other == r {
				continue
			}
			if path := pathBetween(other, r); path != nil {
				v.p.add(r.Spec.Line, r.ID, "root %q is reachable from root %q (%s)", r.ID, other.ID, strings.Join(nodeIDs(path), " -> "))
				reported = true
				break
			}
		}
		if !reported {
			parents := nodeIDs(append(slices.Clone(r.DataParents), r.ControlParents...))
			v.p.add(r.Spec.Line, r.ID, "root %q has parents (%s): a root cannot be a child or a then target", r.ID, strings.Join(parents, ", "))
		}
	}
}

func nodeIDs(ns []*Node) []string {
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	return ids
}

// pathBetween returns a shortest path from a to b (a != b), or nil.
func pathBetween(a, b *Node) []*Node {
	prev := map[*Node]*Node{a: nil}
	queue := []*Node{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range successors(n) {
			if _, seen := prev[s]; seen {
				continue
			}
			prev[s] = n
			if s == b {
				var path []*Node
				for at := b; at != nil; at = prev[at] {
					path = append(path, at)
				}
				slices.Reverse(path)
				return path
			}
			queue = append(queue, s)
		}
	}
	return nil
}

// reach warns about nodes no root leads to.
func (v *validator) reach() {
	seen := map[*Node]bool{}
	queue := slices.Clone(v.rootList)
	for _, r := range queue {
		seen[r] = true
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range successors(n) {
			if !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	v.reached = seen
	for _, n := range v.list {
		if seen[n] || len(v.rootList) == 0 {
			continue
		}
		if !hasParents(n) {
			v.warn(n.Spec.Line, n.ID, "unreachable: no parents and not among roots (%s); it never runs", strings.Join(nodeIDs(v.rootList), ", "))
		} else {
			v.warn(n.Spec.Line, n.ID, "unreachable from the roots (%s); it never runs", strings.Join(nodeIDs(v.rootList), ", "))
		}
	}
}

// inputs checks that nodes that judge have something to read.
func (v *validator) inputs() {
	for _, n := range v.list {
		if len(n.Spec.Params) > 0 || len(n.DataParents) > 0 {
			continue
		}
		switch n.Class {
		case ClassTask:
			v.p.add(n.Spec.Line, n.ID, "task node reads nothing: it has neither params nor a parent task whose output it receives")
		case ClassBinary, ClassChoice:
			v.warn(n.Spec.Line, n.ID, "%s node reads nothing: it has no params and no parent task; the judge sees only the criteria", n.Class)
		}
	}
}

// A run is a set of verdicts: each node that runs answers one. A node runs
// when every data parent ran and, if it has control parents, one of them
// answered a verdict leading to it — so whether a node can run at all, and
// whether a score can follow a verdict, depends on which verdicts can hold
// together, not on the edges alone. Every path of edges ends in a leaf (a
// decision node has verdicts, each with an outcome; a task has children),
// yet a node that needs the output of a task only one verdict leads to,
// and a then only another verdict of the same node gives, never runs: a
// case walking into it ends with "no leaf fired". scored finds those before
// any case runs.
//
// picks is a set of verdicts that hold together, by node index.
type picks map[int]string

// with merges p and q; false when they give one node two verdicts.
func (p picks) with(q picks) (picks, bool) {
	out := make(picks, len(p)+len(q))
	for k, x := range p {
		out[k] = x
	}
	for k, x := range q {
		if y, ok := out[k]; ok && y != x {
			return nil, false
		}
		out[k] = x
	}
	return out, true
}

// Bounds of scored: the alternatives kept per node, and the search steps
// per graph. Configured graphs are far below both; past them the graph is
// accepted with a warning and the run-time check ("no leaf fired") stands.
const (
	maxAlternatives = 64
	maxSearchSteps  = 100_000
)

type scoring struct {
	nodes []*Node // by index
	// needs[n] lists minimal sets of verdicts under which n runs, one per
	// way it can run; empty when it never runs.
	needs     map[*Node][]picks
	steps     int
	exhausted bool
}

// scored reports, on an otherwise valid graph, each node the roots lead
// to that can never run, and each verdict no score can follow in any case.
// It asks "can", not "must": a graph whose verdicts can each reach a score
// may still, for some crossed combination of verdicts, fire no leaf (two
// gates each of which feeds the other's branch); such a case fails at run
// time with "no leaf fired", as before. Deciding "must" is as hard as
// satisfiability in general, and a verdict that can score is not dead
// configuration.
func (v *validator) scored() {
	sc := &scoring{nodes: v.list, needs: map[*Node][]picks{}}
	isRoot := map[*Node]bool{}
	for _, r := range v.rootList {
		isRoot[r] = true
	}
	for _, n := range topoOrder(v.list) {
		alts, ok := sc.runs(n, isRoot[n])
		if !ok {
			v.warn(v.spec.Line, "", "not checked that every verdict can reach a score: the graph runs in more than %d ways through a node (%s)", maxAlternatives, n.ID)
			return
		}
		sc.needs[n] = alts
	}
	canRun := func(n *Node) bool { return len(sc.needs[n]) > 0 }
	// bad: the node runs in some case, and in none does a score follow.
	bad := map[*Node]bool{}
	for _, n := range v.list {
		bad[n] = v.reached[n] && canRun(n) && !sc.leads(n, picks{})
	}
	// One message per cause: a node that can never run, and a verdict
	// whose dead end is not already explained by the node it leads to.
	for _, n := range v.list {
		if !v.reached[n] {
			continue // warned: unreachable
		}
		if !canRun(n) {
			if !slices.ContainsFunc(parentsOf(n), func(p *Node) bool { return v.reached[p] && !canRun(p) }) {
				v.p.add(n.Spec.Line, n.ID, "can never run: %s", sc.why(n))
			}
			continue
		}
		// A task no score can follow is explained by its children: each
		// child's ways to run include the task's, so a child that can
		// run and is not bad itself would lead on from the task.
		for _, vd := range n.Spec.Verdicts {
			t := n.Then[vd.Key]
			if t == nil {
				continue // a score or a child metric: a leaf
			}
			line := max(vd.Line, n.Spec.Line)
			switch {
			case !canRun(t):
				v.p.add(line, n.ID, "verdict %q: then %q, which can never run: no score can follow this verdict", vd.Key, t.ID)
			case !sc.after(n, vd.Key, t, false):
				v.p.add(line, n.ID, "verdict %q: then %q, which never runs after this verdict: %s", vd.Key, t.ID, sc.whyNotAfter(n, vd.Key, t))
			case !bad[t] && !sc.after(n, vd.Key, t, true):
				v.p.add(line, n.ID, "verdict %q: then %q, after which no score can follow: the nodes %q leads to cannot run after this verdict", vd.Key, t.ID, t.ID)
			}
		}
	}
	if sc.exhausted {
		v.warn(v.spec.Line, "", "not fully checked that every verdict can reach a score: the graph has too many paths (more than %d steps)", maxSearchSteps)
	}
}

// why says why n never runs: the two things it needs that exclude each
// other, when each comes one way only; else what it needs.
func (sc *scoring) why(n *Node) string {
	type part struct {
		what string
		alts []picks
		via  *Node // the control parent, for the part that is its verdict
	}
	var parts []part
	for _, p := range n.DataParents {
		parts = append(parts, part{"the output of " + p.ID, sc.needs[p], nil})
	}
	if len(n.ControlParents) == 1 {
		p := n.ControlParents[0]
		var keys []string
		for _, vd := range p.Spec.Verdicts {
			if p.Then[vd.Key] == n {
				keys = append(keys, vd.Key)
			}
		}
		if len(keys) == 1 {
			parts = append(parts, part{fmt.Sprintf("%s %q", p.ID, keys[0]), product(sc.needs[p], []picks{{p.index: keys[0]}}), p})
		}
	}
	for i, a := range parts {
		for _, b := range parts[i+1:] {
			if len(a.alts) != 1 || len(b.alts) != 1 {
				continue
			}
			for _, d := range slices.Sorted(maps.Keys(a.alts[0])) {
				x, y := a.alts[0][d], b.alts[0][d]
				switch {
				case y == "" || x == y:
					continue
				case b.via == sc.nodes[d]:
					return fmt.Sprintf("it needs %s, which comes only when %s answers %q, but %s leads to it only on %q",
						a.what, b.via.ID, x, b.via.ID, y)
				default:
					return fmt.Sprintf("it needs %s, which comes only when %s answers %q, and %s, which comes only when %s answers %q",
						a.what, sc.nodes[d].ID, x, b.what, sc.nodes[d].ID, y)
				}
			}
		}
	}
	return fmt.Sprintf("no set of verdicts gives it %s at once", needsText(n))
}

// whyNotAfter names a data parent of t whose output never comes once n
// answered verdict.
func (sc *scoring) whyNotAfter(n *Node, verdict string, t *Node) string {
	for _, d := range t.DataParents {
		comes := false
		var only picks
		for _, alt := range sc.needs[n] {
			ctx, ok := alt.with(picks{n.index: verdict})
			comes = comes || ok && slices.ContainsFunc(sc.needs[d], func(p picks) bool { _, ok := ctx.with(p); return ok })
			if ok && len(sc.needs[d]) == 1 && only == nil {
				need := sc.needs[d][0]
				for _, k := range slices.Sorted(maps.Keys(need)) {
					if y, set := ctx[k]; set && y != need[k] {
						only = picks{k: need[k]}
						break
					}
				}
			}
		}
		if comes {
			continue
		}
		for k, x := range only {
			return fmt.Sprintf("it needs the output of %s, which comes only when %s answers %q", d.ID, sc.nodes[k].ID, x)
		}
		return fmt.Sprintf("it needs the output of %s, which never comes after it", d.ID)
	}
	return fmt.Sprintf("it needs %s, which never come together after it", needsText(t))
}

func parentsOf(n *Node) []*Node { return append(slices.Clone(n.DataParents), n.ControlParents...) }

// needsText says what n needs to run: its data parents' outputs and a
// verdict leading to it.
func needsText(n *Node) string {
	var parts []string
	if len(n.DataParents) > 0 {
		parts = append(parts, "the output of "+strings.Join(nodeIDs(n.DataParents), " and "))
	}
	var into []string
	for _, p := range n.ControlParents {
		for _, vd := range p.Spec.Verdicts {
			if p.Then[vd.Key] == n {
				into = append(into, fmt.Sprintf("%s %q", p.ID, vd.Key))
			}
		}
	}
	if len(into) > 0 {
		parts = append(parts, "a verdict leading to it ("+strings.Join(into, " or ")+")")
	}
	return strings.Join(parts, " and ")
}

// runs computes the ways n can run from its parents'; false past
// maxAlternatives.
func (sc *scoring) runs(n *Node, root bool) ([]picks, bool) {
	if root {
		return []picks{{}}, true
	}
	if len(n.DataParents)+len(n.ControlParents) == 0 {
		return nil, true // not a root, nothing leads here
	}
	// Before reduce the sets may be more than maxAlternatives (every
	// verdict of a node leading here), but not without bound.
	const unreduced = 8 * maxAlternatives
	alts := []picks{{}}
	for _, p := range n.DataParents { // AND
		if alts = product(alts, sc.needs[p]); len(alts) > unreduced {
			return nil, false
		}
		if alts = sc.reduce(alts); len(alts) > maxAlternatives {
			return nil, false
		}
	}
	if len(n.ControlParents) > 0 { // OR
		var via []picks
		for _, p := range n.ControlParents {
			for _, vd := range p.Spec.Verdicts {
				if p.Then[vd.Key] == n {
					via = append(via, product(sc.needs[p], []picks{{p.index: vd.Key}})...)
				}
			}
			if len(via) > unreduced {
				return nil, false
			}
		}
		if via = sc.reduce(via); len(via) > maxAlternatives {
			return nil, false
		}
		if alts = product(alts, via); len(alts) > unreduced {
			return nil, false
		}
		alts = sc.reduce(alts)
	}
	return alts, len(alts) <= maxAlternatives
}

// product is every consistent union of one set from a and one from b.
func product(a, b []picks) []picks {
	var out []picks
	for _, x := range a {
		for _, y := range b {
			if m, ok := x.with(y); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// reduce keeps alternatives small. A set that contains another adds no way
// to run; and sets that differ only in the verdict of a node d, one for
// each verdict d has, say no more than their common part when that part
// already makes d run (it then answers one of them) — a node every verdict
// of which leads to the same next node adds no condition to it.
func (sc *scoring) reduce(alts []picks) []picks {
	for {
		alts = minimal(alts)
		// the alternatives grouped by what they hold besides node d's verdict
		type group struct {
			base     picks
			d        int
			verdicts map[string]bool
		}
		groups := map[string]*group{}
		var order []string
		for _, a := range alts {
			idx := slices.Sorted(maps.Keys(a))
			for _, d := range idx {
				k := a.keyWithout(idx, d)
				g := groups[k]
				if g == nil {
					base := maps.Clone(a)
					delete(base, d)
					g = &group{base: base, d: d, verdicts: map[string]bool{}}
					groups[k] = g
					order = append(order, k)
				}
				g.verdicts[a[d]] = true
			}
		}
		var merged []picks
		for _, k := range order {
			g := groups[k]
			node := sc.nodes[g.d]
			all := len(node.Verdicts) > 0 && !slices.ContainsFunc(node.Verdicts, func(w string) bool { return !g.verdicts[w] })
			if all && slices.ContainsFunc(sc.needs[node], func(r picks) bool { return subset(r, g.base) }) {
				merged = append(merged, g.base)
			}
		}
		if len(merged) == 0 {
			return alts
		}
		alts = append(alts, merged...)
	}
}

// keyWithout is a canonical form of p without node d, naming d; idx are
// p's keys, sorted.
func (p picks) keyWithout(idx []int, d int) string {
	b := strconv.AppendInt(nil, int64(d), 10)
	for _, i := range idx {
		if i != d {
			b = append(b, ';')
			b = strconv.AppendInt(b, int64(i), 10)
			b = strconv.AppendQuote(append(b, '='), p[i])
		}
	}
	return string(b)
}

// minimal drops the sets that contain another (and repeats).
func minimal(alts []picks) []picks {
	var out []picks
	for i, a := range alts {
		keep := true
		for j, b := range alts {
			if i != j && subset(b, a) && (len(b) < len(a) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, a)
		}
	}
	return out
}

func subset(a, b picks) bool {
	if len(a) > len(b) {
		return false
	}
	for k, x := range a {
		if y, ok := b[k]; !ok || y != x {
			return false
		}
	}
	return true
}

// after reports whether t can run once n answered verdict, and, with
// score, whether a score can then follow from t.
func (sc *scoring) after(n *Node, verdict string, t *Node, score bool) bool {
	for _, alt := range sc.needs[n] {
		ctx, ok := alt.with(picks{n.index: verdict})
		if !ok {
			continue
		}
		if score && sc.leads(t, ctx) {
			return true
		}
		if !score && slices.ContainsFunc(sc.needs[t], func(p picks) bool { _, ok := ctx.with(p); return ok }) {
			return true
		}
	}
	return false
}

// leads reports whether some run holding the verdicts in ctx runs x and
// fires a leaf x leads to. It searches depth first and stops at the first
// such run; past maxSearchSteps it answers true (unchecked, warned).
func (sc *scoring) leads(x *Node, ctx picks) bool {
	if sc.steps++; sc.steps > maxSearchSteps {
		sc.exhausted = true
		return true
	}
	for _, alt := range sc.needs[x] {
		m, ok := ctx.with(alt)
		if !ok {
			continue
		}
		if x.Class.Produces() {
			for _, ch := range x.Children {
				if sc.leads(ch, m) {
					return true
				}
			}
			continue
		}
		for _, vd := range x.Spec.Verdicts {
			if p, set := m[x.index]; set && p != vd.Key {
				continue
			}
			t := x.Then[vd.Key]
			if t == nil {
				return true // a score or a child metric
			}
			if m2, ok := m.with(picks{x.index: vd.Key}); ok && sc.leads(t, m2) {
				return true
			}
		}
	}
	return false
}

// topoOrder orders nodes so that every node comes after all its parents,
// ties broken by configuration order. The graph must be acyclic.
func topoOrder(list []*Node) []*Node {
	indeg := map[*Node]int{}
	for _, n := range list {
		for _, s := range successors(n) {
			indeg[s]++
		}
	}
	h := &nodeHeap{}
	for _, n := range list {
		if indeg[n] == 0 {
			heap.Push(h, n)
		}
	}
	order := make([]*Node, 0, len(list))
	for h.Len() > 0 {
		n := heap.Pop(h).(*Node)
		order = append(order, n)
		for _, s := range successors(n) {
			indeg[s]--
			if indeg[s] == 0 {
				heap.Push(h, s)
			}
		}
	}
	return order
}

type nodeHeap []*Node

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return h[i].index < h[j].index }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(*Node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
