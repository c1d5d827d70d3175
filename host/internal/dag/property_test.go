package dag

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
)

// randomSpec builds a random dag: nodes in a random topological order,
// each with at least one earlier parent where one can take it, some shared
// nodes, leaves scoring or naming a metric. It may be invalid (the caller
// validates and skips those).
func randomSpec(r *rand.Rand) *Spec {
	n := 2 + r.Intn(11)
	spec := &Spec{Aggregate: []string{"min", "mean", "max"}[r.Intn(3)]}
	roots := 1 // the first roots nodes get no parent
	if r.Intn(4) == 0 {
		roots = min(2+r.Intn(2), n-1)
	}
	kinds := []string{KindTask, KindBinary, KindChoice, "json_valid", "traffic", "summarise"}
	words := []string{"alpha", "beta", "gamma", "delta"}
	for i := 0; i < n; i++ {
		kind := kinds[r.Intn(len(kinds))]
		if roots > 1 && i < roots {
			kind = []string{KindTask, "summarise"}[r.Intn(2)] // several roots: all produce
		}
		if i == n-1 && (kind == KindTask || kind == "summarise") {
			kind = KindBinary // the last node cannot have children
		}
		// ids whose sort order differs from configuration order
		ns := NodeSpec{ID: fmt.Sprintf("%c%d", 'a'+r.Intn(26), i), Kind: kind, Params: []string{"input"}}
		switch kind {
		case KindTask:
			ns.Instructions = "do " + ns.ID
			if r.Intn(2) == 0 {
				ns.OutputLabel = "Label " + ns.ID
			}
		case KindBinary:
			ns.Criteria = "is " + ns.ID
			ns.Verdicts = Verdicts{{Key: "true"}, {Key: "false"}}
		case KindChoice:
			ns.Criteria = "which " + ns.ID
			for _, w := range words[:1+r.Intn(len(words))] {
				ns.Verdicts = append(ns.Verdicts, Verdict{Key: w})
			}
		case "json_valid":
			ns.Params = nil
			ns.Verdicts = Verdicts{{Key: "false"}, {Key: "true"}}
		case "traffic":
			ns.Verdicts = Verdicts{{Key: "green"}, {Key: "amber"}, {Key: "red"}}
		}
		spec.Nodes = append(spec.Nodes, ns)
	}
	produces := func(k string) bool { return k == KindTask || k == "summarise" }
	// connect tries to add an edge j -> i; false when j cannot take it.
	connect := func(j, i int) bool {
		pj, id := &spec.Nodes[j], spec.Nodes[i].ID
		if produces(pj.Kind) {
			if slices.Contains(pj.Children, id) {
				return false
			}
			pj.Children = append(pj.Children, id)
			return true
		}
		free := []int{}
		for k, v := range pj.Verdicts {
			if v.Then == "" && v.Score == nil && v.Metric == "" {
				free = append(free, k)
			}
		}
		if len(free) == 0 {
			return false
		}
		pj.Verdicts[free[r.Intn(len(free))]].Then = id
		return true
	}
	for i := roots; i < n; i++ {
		for _, j := range r.Perm(i) { // one parent at least, if any can take it
			if connect(j, i) {
				break
			}
		}
		for j := 0; j < i; j++ { // shared nodes
			if r.Intn(5) == 0 {
				connect(j, i)
			}
		}
	}
	for i := range spec.Nodes {
		ns := &spec.Nodes[i]
		if produces(ns.Kind) && len(ns.Children) == 0 && i+1 < n {
			connect(i, i+1+r.Intn(n-i-1))
		}
		for k := range ns.Verdicts {
			v := &ns.Verdicts[k]
			if v.Then != "" {
				continue
			}
			switch r.Intn(5) {
			case 0:
				v.Metric = []string{"m1", "m2"}[r.Intn(2)]
			default:
				s := float64(r.Intn(21)) / 2
				v.Score = &s
			}
		}
	}
	return spec
}

// reference evaluates sequentially, from the spec alone: a node runs when
// all its data parents ran and, if it has control parents, one of them
// chose it.
type reference struct {
	ran    map[string]bool
	path   []string
	leaves []string
	score  float64
	inputs map[string][]abi.NodeInput
}

func referenceEval(spec *Spec, g *Graph, verdicts map[string]string, metrics map[string]float64) reference {
	byID := map[string]*NodeSpec{}
	index := map[string]int{}
	dataParents := map[string][]string{}
	ctrlParents := map[string][]string{}
	for i := range spec.Nodes {
		ns := &spec.Nodes[i]
		byID[ns.ID], index[ns.ID] = ns, i
		for _, c := range ns.Children {
			dataParents[c] = append(dataParents[c], ns.ID)
		}
		for _, v := range ns.Verdicts {
			if v.Then != "" && !slices.Contains(ctrlParents[v.Then], ns.ID) {
				ctrlParents[v.Then] = append(ctrlParents[v.Then], ns.ID)
			}
		}
	}
	// topological order, ties by configuration order
	var order []string
	placed := map[string]bool{}
	for len(order) < len(spec.Nodes) {
		for _, ns := range spec.Nodes {
			if placed[ns.ID] {
				continue
			}
			ready := true
			for _, p := range append(slices.Clone(dataParents[ns.ID]), ctrlParents[ns.ID]...) {
				ready = ready && placed[p]
			}
			if ready {
				placed[ns.ID] = true
				order = append(order, ns.ID)
				break
			}
		}
	}
	ref := reference{ran: map[string]bool{}, inputs: map[string][]abi.NodeInput{}}
	type leaf struct {
		node, verdict string
		score         float64
		desc          string
	}
	var leaves []leaf
	for _, id := range order {
		ns := byID[id]
		runs := len(dataParents[id])+len(ctrlParents[id]) > 0
		for _, p := range dataParents[id] {
			runs = runs && ref.ran[p]
		}
		if len(ctrlParents[id]) > 0 {
			chosen := false
			for _, p := range ctrlParents[id] {
				if v, _ := byID[p].Verdicts.Get(verdicts[p]); ref.ran[p] && v.Then == id {
					chosen = true
				}
			}
			runs = runs && chosen
		}
		if !runs && !slices.ContainsFunc(g.Roots, func(n *Node) bool { return n.ID == id }) {
			continue
		}
		ref.ran[id] = true
		ref.path = append(ref.path, id)
		var in []abi.NodeInput
		for _, p := range dataParents[id] {
			label := byID[p].OutputLabel
			if label == "" {
				label = p
			}
			in = append(in, abi.NodeInput{NodeID: p, Label: label, Output: "out:" + p})
		}
		ref.inputs[id] = in
		v, ok := ns.Verdicts.Get(verdicts[id])
		switch {
		case !ok || v.Then != "":
		case v.Score != nil:
			leaves = append(leaves, leaf{id, v.Key, *v.Score / 10, fmt.Sprintf("%s=%s:%.4f", id, v.Key, *v.Score/10)})
		default:
			s := metrics[v.Metric]
			leaves = append(leaves, leaf{id, v.Key, s, fmt.Sprintf("%s=%s:metric %s %.4f", id, v.Key, v.Metric, s)})
		}
	}
	sort.Slice(leaves, func(i, j int) bool {
		if leaves[i].node != leaves[j].node {
			return leaves[i].node < leaves[j].node
		}
		return leaves[i].verdict < leaves[j].verdict
	})
	for i, l := range leaves {
		ref.leaves = append(ref.leaves, l.desc)
		switch {
		case i == 0:
			ref.score = l.score
		case spec.Aggregate == "min":
			ref.score = min(ref.score, l.score)
		case spec.Aggregate == "max":
			ref.score = max(ref.score, l.score)
		default:
			ref.score += l.score
		}
	}
	if spec.Aggregate == "mean" && len(leaves) > 0 {
		ref.score /= float64(len(leaves))
	}
	return ref
}

// gated is a Runner that announces each call and blocks until released.
type gated struct {
	verdicts map[string]string
	metrics  map[string]float64
	arrivals chan arrival

	mu     sync.Mutex
	calls  map[string]int
	inputs map[string][]abi.NodeInput
}

type arrival struct {
	key     string // "node:<id>" or "metric:<name>"
	release chan struct{}
}

func (g *gated) wait(key string) {
	a := arrival{key: key, release: make(chan struct{})}
	g.mu.Lock()
	g.calls[key]++
	g.mu.Unlock()
	g.arrivals <- a
	<-a.release
}

func (g *gated) RunNode(_ context.Context, n *Node, in []abi.NodeInput, verdicts []string) (NodeOutcome, error) {
	g.mu.Lock()
	g.inputs[n.ID] = in
	g.mu.Unlock()
	g.wait("node:" + n.ID)
	if n.Class.Produces() {
		return NodeOutcome{NodeResult: abi.NodeResult{Output: "out:" + n.ID}}, nil
	}
	return NodeOutcome{NodeResult: abi.NodeResult{Verdict: g.verdicts[n.ID]}}, nil
}

func (g *gated) RunMetric(_ context.Context, m string) (MetricOutcome, error) {
	g.wait("metric:" + m)
	return MetricOutcome{Score: g.metrics[m]}, nil
}

// TestEvaluateProperty: over a few hundred random graphs and verdicts, the
// concurrent scheduler gives the sequential reference's Score, Path and
// Leaves, whatever order nodes complete in; each node that should run runs
// exactly once, nothing else runs, and inputs are the data parents' outputs
// in configuration order.
func TestEvaluateProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	env := testEnv()
	graphs, tries := 0, 0
	for graphs < 300 {
		tries++
		if tries > 20000 {
			t.Fatalf("only %d valid random graphs in %d tries", graphs, tries)
		}
		spec := randomSpec(rng)
		g, _, err := Validate(spec, env)
		if err != nil {
			continue
		}
		graphs++
		for trial := 0; trial < 3; trial++ {
			verdicts := map[string]string{}
			for _, n := range g.Nodes {
				if len(n.Verdicts) > 0 {
					verdicts[n.ID] = n.Verdicts[rng.Intn(len(n.Verdicts))]
				}
			}
			metrics := map[string]float64{"m1": rng.Float64(), "m2": rng.Float64()}
			ref := referenceEval(spec, g, verdicts, metrics)
			name := fmt.Sprintf("graph %d trial %d", graphs, trial)
			for round := 0; round < 2; round++ {
				res, err := frontierRun(t, g, ref, verdicts, metrics, rng)
				check(t, name+" frontier", res, err, ref)
			}
			for _, limit := range []int{1, 3} {
				res, err := goschedRun(t, g, verdicts, metrics, limit, rng.Int63())
				check(t, fmt.Sprintf("%s limit %d", name, limit), res, err, ref)
			}
			if t.Failed() {
				t.Fatalf("%s: spec %s\nverdicts %v", name, Render(g, nil), verdicts)
			}
		}
	}
	t.Logf("%d valid graphs from %d tries", graphs, tries)
}

func check(t *testing.T, name string, res *Result, err error, ref reference) {
	t.Helper()
	if res == nil {
		t.Errorf("%s: nil result (err %v)", name, err)
		return
	}
	if len(ref.leaves) == 0 {
		if err == nil || !strings.Contains(err.Error(), "no leaf fired") {
			t.Errorf("%s: no leaf should fire, got err %v", name, err)
		}
	} else if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	if res.Score != ref.score {
		t.Errorf("%s: score %.17g, reference %.17g", name, res.Score, ref.score)
	}
	if !slices.Equal(res.Path, ref.path) {
		t.Errorf("%s: path %v, reference %v", name, res.Path, ref.path)
	}
	if got := leafStrings(res.Leaves); !slices.Equal(got, ref.leaves) {
		t.Errorf("%s: leaves %v, reference %v", name, got, ref.leaves)
	}
}

// frontierRun lets the scheduler start everything it can (no cap), waits
// until every node the reference says is runnable has started, then
// completes one of them chosen at random, and so on. A node that starts
// early, twice, or never is an error.
func frontierRun(t *testing.T, g *Graph, ref reference, verdicts map[string]string, metrics map[string]float64, rng *rand.Rand) (*Result, error) {
	t.Helper()
	r := &gated{verdicts: verdicts, metrics: metrics, arrivals: make(chan arrival),
		calls: map[string]int{}, inputs: map[string][]abi.NodeInput{}}
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Evaluate(context.Background(), g, r, WithConcurrency(1000))
		done <- out{res, err}
	}()
	released := map[string]bool{}
	waiting := map[string]arrival{}
	guard := time.NewTimer(20 * time.Second) // deadlock guard only
	defer guard.Stop()
	for {
		expect := runnable(g, ref, verdicts, released)
		if len(expect) == 0 {
			break
		}
		for !allIn(expect, waiting) {
			select {
			case a := <-r.arrivals:
				if !slices.Contains(expect, a.key) {
					t.Errorf("%s started early or should never run (runnable: %v)", a.key, expect)
				}
				waiting[a.key] = a
			case <-guard.C:
				t.Fatalf("scheduler never started %v (waiting: %d)", expect, len(waiting))
			}
		}
		key := expect[rng.Intn(len(expect))]
		released[key] = true
		close(waiting[key].release)
		delete(waiting, key)
	}
	for {
		select {
		case o := <-done:
			for key, n := range r.calls {
				if n != 1 {
					t.Errorf("%s ran %d times", key, n)
				}
			}
			for id, want := range ref.inputs {
				if got := r.inputs[id]; !reflect.DeepEqual(got, want) {
					t.Errorf("node %s inputs %+v, want %+v", id, got, want)
				}
			}
			return o.res, o.err
		case a := <-r.arrivals:
			t.Errorf("%s ran but should not", a.key)
			close(a.release)
		case <-guard.C:
			t.Fatalf("Evaluate did not return")
		}
	}
}

// runnable lists, sorted, the jobs the reference says may run now that the
// released ones have completed and that are not completed yet.
func runnable(g *Graph, ref reference, verdicts map[string]string, released map[string]bool) []string {
	var out []string
	metricStarted := map[string]bool{}
	for _, n := range g.Nodes {
		if !ref.ran[n.ID] {
			continue
		}
		key := "node:" + n.ID
		ok := true
		for _, p := range n.DataParents {
			ok = ok && released["node:"+p.ID]
		}
		if len(n.ControlParents) > 0 {
			chosen := false
			for _, p := range n.ControlParents {
				chosen = chosen || (released["node:"+p.ID] && p.Then[verdicts[p.ID]] == n)
			}
			ok = ok && chosen
		}
		if ok && !released[key] {
			out = append(out, key)
		}
		if v, found := n.Outcome(verdicts[n.ID]); found && v.Metric != "" && released[key] {
			mk := "metric:" + v.Metric
			if !metricStarted[mk] && !released[mk] {
				out = append(out, mk)
			}
			metricStarted[mk] = true
		}
	}
	sort.Strings(out)
	return out
}

func allIn(keys []string, m map[string]arrival) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// goschedRun runs with a concurrency cap; each call yields the processor a
// random number of times so completions interleave randomly. It checks the
// cap is never exceeded.
func goschedRun(t *testing.T, g *Graph, verdicts map[string]string, metrics map[string]float64, limit int, seed int64) (*Result, error) {
	t.Helper()
	r := &yielding{verdicts: verdicts, metrics: metrics, rng: rand.New(rand.NewSource(seed))}
	res, err := Evaluate(context.Background(), g, r, WithConcurrency(limit))
	if p := r.peak.Load(); p > int32(limit) {
		t.Errorf("peak concurrency %d over the limit %d", p, limit)
	}
	return res, err
}

type yielding struct {
	verdicts   map[string]string
	metrics    map[string]float64
	mu         sync.Mutex
	rng        *rand.Rand
	cur, peak  atomic.Int32
	calls      sync.Map
	doubleCall atomic.Bool
}

func (y *yielding) enter(key string) {
	if _, dup := y.calls.LoadOrStore(key, true); dup {
		y.doubleCall.Store(true)
	}
	n := y.cur.Add(1)
	for {
		p := y.peak.Load()
		if n <= p || y.peak.CompareAndSwap(p, n) {
			break
		}
	}
	y.mu.Lock()
	k := y.rng.Intn(20)
	y.mu.Unlock()
	for i := 0; i < k; i++ {
		runtime.Gosched()
	}
	y.cur.Add(-1)
}

func (y *yielding) RunNode(_ context.Context, n *Node, _ []abi.NodeInput, _ []string) (NodeOutcome, error) {
	y.enter("node:" + n.ID)
	if y.doubleCall.Load() {
		return NodeOutcome{}, fmt.Errorf("a job ran twice")
	}
	if n.Class.Produces() {
		return NodeOutcome{NodeResult: abi.NodeResult{Output: "out:" + n.ID}}, nil
	}
	return NodeOutcome{NodeResult: abi.NodeResult{Verdict: y.verdicts[n.ID]}}, nil
}

func (y *yielding) RunMetric(_ context.Context, m string) (MetricOutcome, error) {
	y.enter("metric:" + m)
	if y.doubleCall.Load() {
		return MetricOutcome{}, fmt.Errorf("a job ran twice")
	}
	return MetricOutcome{Score: y.metrics[m]}, nil
}

// bruteForce walks spec under every assignment of verdicts (nil when there
// are more than limit) and reports, per node, whether it runs in some case
// and whether a fired leaf then follows from it, and per verdict whether a
// leaf follows it in some case.
type bruteForce struct {
	reached, canRun, leads map[string]bool
	verdictLeads           map[string]map[string]bool
}

func bruteForceWalk(spec *Spec, limit int) *bruteForce {
	byID := map[string]*NodeSpec{}
	dataParents, ctrlParents := map[string][]string{}, map[string][]string{}
	for i := range spec.Nodes {
		ns := &spec.Nodes[i]
		byID[ns.ID] = ns
		for _, c := range ns.Children {
			dataParents[c] = append(dataParents[c], ns.ID)
		}
		for _, v := range ns.Verdicts {
			if v.Then != "" && !slices.Contains(ctrlParents[v.Then], ns.ID) {
				ctrlParents[v.Then] = append(ctrlParents[v.Then], ns.ID)
			}
		}
	}
	var order []string // topological
	placed := map[string]bool{}
	for len(order) < len(spec.Nodes) {
		progress := false
		for _, ns := range spec.Nodes {
			ready := !placed[ns.ID]
			for _, p := range append(slices.Clone(dataParents[ns.ID]), ctrlParents[ns.ID]...) {
				ready = ready && placed[p]
			}
			if ready {
				placed[ns.ID], progress = true, true
				order = append(order, ns.ID)
			}
		}
		if !progress {
			return nil // a cycle
		}
	}
	isRoot := map[string]bool{}
	for _, ns := range spec.Nodes {
		isRoot[ns.ID] = len(dataParents[ns.ID])+len(ctrlParents[ns.ID]) == 0
	}
	bf := &bruteForce{reached: map[string]bool{}, canRun: map[string]bool{}, leads: map[string]bool{}, verdictLeads: map[string]map[string]bool{}}
	for _, id := range order {
		bf.reached[id] = isRoot[id]
		for _, p := range append(slices.Clone(dataParents[id]), ctrlParents[id]...) {
			bf.reached[id] = bf.reached[id] || bf.reached[p]
		}
	}
	var deciders []*NodeSpec
	total := 1
	for _, id := range order {
		if ns := byID[id]; len(ns.Verdicts) > 0 {
			deciders = append(deciders, ns)
			if total *= len(ns.Verdicts); total > limit {
				return nil
			}
		}
	}
	for a := 0; a < total; a++ {
		pick, rest := map[string]Verdict{}, a
		for _, ns := range deciders {
			pick[ns.ID] = ns.Verdicts[rest%len(ns.Verdicts)]
			rest /= len(ns.Verdicts)
		}
		ran := map[string]bool{}
		for _, id := range order {
			runs := isRoot[id]
			if !runs {
				runs = true
				for _, p := range dataParents[id] {
					runs = runs && ran[p]
				}
				if len(ctrlParents[id]) > 0 {
					chosen := false
					for _, p := range ctrlParents[id] {
						chosen = chosen || (ran[p] && pick[p].Then == id)
					}
					runs = runs && chosen
				}
			}
			ran[id] = runs
		}
		down := map[string]bool{}
		for i := len(order) - 1; i >= 0; i-- {
			id := order[i]
			if !ran[id] {
				continue
			}
			bf.canRun[id] = true
			ns := byID[id]
			if v, ok := pick[id]; ok {
				down[id] = v.Then == "" || (ran[v.Then] && down[v.Then])
				if bf.verdictLeads[id] == nil {
					bf.verdictLeads[id] = map[string]bool{}
				}
				bf.verdictLeads[id][v.Key] = bf.verdictLeads[id][v.Key] || down[id]
			} else {
				down[id] = slices.ContainsFunc(ns.Children, func(c string) bool { return ran[c] && down[c] })
			}
			bf.leads[id] = bf.leads[id] || down[id]
		}
	}
	return bf
}

// bad reports whether some node the roots lead to never runs, or some
// verdict or task of a node that runs never leads to a fired leaf.
func (bf *bruteForce) bad(spec *Spec) bool {
	for _, ns := range spec.Nodes {
		switch {
		case !bf.reached[ns.ID]:
		case !bf.canRun[ns.ID]:
			return true
		case !bf.leads[ns.ID]:
			return true
		}
		for _, v := range ns.Verdicts {
			if bf.canRun[ns.ID] && !bf.verdictLeads[ns.ID][v.Key] {
				return true
			}
		}
	}
	return false
}

var (
	neverRuns   = regexp.MustCompile(`node "([^"]+)": can never run`)
	deadVerdict = regexp.MustCompile(`node "([^"]+)": verdict "([^"]*)": then `)
)

// TestValidateLeafReachProperty: over random graphs, Validate rejects a
// graph for a node that never runs or a verdict no score follows exactly
// when walking every assignment of verdicts finds one, and each node and
// verdict it names is one.
func TestValidateLeafReachProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	env := testEnv()
	var checked, rejected int
	for try := 0; try < 1500; try++ {
		spec := randomSpec(rng)
		_, _, err := Validate(spec, env)
		var problems []string
		if de, ok := err.(*Error); ok {
			problems = de.Problems
		}
		scoredRan := err == nil || slices.ContainsFunc(problems, func(p string) bool {
			return neverRuns.MatchString(p) || deadVerdict.MatchString(p)
		})
		if !scoredRan {
			continue // a structural problem; scored does not run
		}
		bf := bruteForceWalk(spec, 1<<10)
		if bf == nil {
			continue
		}
		checked++
		if want := bf.bad(spec); (err != nil) != want {
			t.Fatalf("Validate error %v, brute force finds a dead end: %v\nspec: %s", err, want, specJSON(t, spec))
		}
		if err == nil {
			continue
		}
		rejected++
		for _, p := range problems {
			if m := neverRuns.FindStringSubmatch(p); m != nil && bf.canRun[m[1]] {
				t.Fatalf("%q, but node %s runs in some case\nspec: %s", p, m[1], specJSON(t, spec))
			}
			if m := deadVerdict.FindStringSubmatch(p); m != nil && bf.verdictLeads[m[1]][m[2]] {
				t.Fatalf("%q, but a leaf follows that verdict in some case\nspec: %s", p, specJSON(t, spec))
			}
		}
	}
	t.Logf("%d graphs checked against brute force, %d rejected", checked, rejected)
	if checked < 300 || rejected < 50 {
		t.Fatalf("only %d graphs checked, %d rejected: the generator no longer exercises the check", checked, rejected)
	}
}

func specJSON(t *testing.T, spec *Spec) string {
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
