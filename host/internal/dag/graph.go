package dag

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/agentanvil/anvil/abi"
)

// Class is what a node does, whatever its kind's name.
type Class string

const (
	// ClassTask is the built-in task kind: it produces output.
	ClassTask Class = "task"
	// ClassBinary is the built-in binary judgement: verdicts false/true.
	ClassBinary Class = "binary"
	// ClassChoice is the built-in choice judgement: configured verdicts.
	ClassChoice Class = "choice"
	// ClassCode is a plugin node kind with fixed verdicts (a code gate such
	// as json_valid): it decides.
	ClassCode Class = "code"
	// ClassCodeTask is a plugin node kind without verdicts: like a task, it
	// produces output.
	ClassCodeTask Class = "code_task"
)

// Produces reports whether nodes of the class produce output (and use
// children), as opposed to deciding (and using verdicts).
func (c Class) Produces() bool { return c == ClassTask || c == ClassCodeTask }

// Graph is a validated dag: immutable, safe for concurrent Evaluate calls.
type Graph struct {
	// Spec the graph was built from.
	Spec *Spec
	// Aggregate is min, mean or max (defaults applied).
	Aggregate string
	// Reason is path or judge (defaults applied).
	Reason string
	// Nodes in configuration order.
	Nodes []*Node
	// Roots in configuration order of the roots list (or of the nodes when
	// roots are implicit).
	Roots []*Node

	byID  map[string]*Node
	order []*Node // topological, ties by configuration order
}

// Node is one validated node with its edges resolved.
type Node struct {
	ID    string
	Kind  string
	Class Class
	// Spec is the node as configured.
	Spec *NodeSpec
	// Descriptor of the node kind, as the plugin described it.
	Descriptor abi.KindDescriptor
	// Label names the node's output for its children (output_label or id).
	Label string
	// Verdicts are what RunNode is told the node may answer: binary
	// ["false","true"], choice its configured verdicts sorted, code node
	// its kind's Verdicts; nil for nodes that produce output.
	Verdicts []string

	// DataParents are the nodes listing this node among their children, in
	// configuration order; their outputs are this node's inputs.
	DataParents []*Node
	// ControlParents are the decision nodes with a verdict whose then is
	// this node, in configuration order.
	ControlParents []*Node
	// Children are the data children, in the order of the children list.
	Children []*Node
	// Then maps a verdict to the node it leads to (control edges).
	Then map[string]*Node

	index int // configuration order
	topo  int // position in the topological order
}

// Node returns the node with the given id, or nil.
func (g *Graph) Node(id string) *Node { return g.byID[id] }

// Order returns the nodes in topological order, ties broken by
// configuration order. The slice is the caller's.
func (g *Graph) Order() []*Node { return slices.Clone(g.order) }

// RequiredFields is the union of every node's params and of the required
// fields of every node kind used, standard fields first in their canonical
// order, then the others sorted. The engine checks cases against it before
// spending anything. Child metrics' own fields are not included: see
// ChildMetrics.
func (g *Graph) RequiredFields() []string {
	set := map[string]bool{}
	for _, n := range g.Nodes {
		for _, f := range n.Spec.Params {
			set[f] = true
		}
		for _, f := range n.Descriptor.RequiredFields {
			set[f] = true
		}
	}
	var out []string
	for _, f := range abi.StandardFields {
		if set[f] {
			out = append(out, f)
			delete(set, f)
		}
	}
	rest := make([]string, 0, len(set))
	for f := range set {
		rest = append(rest, f)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// ChildMetrics returns the names of the metrics used as leaves, sorted,
// each once.
func (g *Graph) ChildMetrics() []string {
	set := map[string]bool{}
	for _, n := range g.Nodes {
		for _, v := range n.Spec.Verdicts {
			if v.Metric != "" {
				set[v.Metric] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Outcome returns the configured outcome of a verdict of n.
func (n *Node) Outcome(verdict string) (Verdict, bool) { return n.Spec.Verdicts.Get(verdict) }

// RequestConfig is the Config for the node's abi.NodeRequest. For plugin
// kinds it is the configured config verbatim. For the built-in kinds (task,
// binary, choice) it is that config object with the node-level fields
// merged in: "instructions", "output_label" (defaulted to the id),
// "criteria" and "params", each when set.
func (n *Node) RequestConfig() json.RawMessage {
	if n.Class != ClassTask && n.Class != ClassBinary && n.Class != ClassChoice {
		return n.Spec.Config
	}
	m := map[string]json.RawMessage{}
	if len(n.Spec.Config) > 0 {
		if err := json.Unmarshal(n.Spec.Config, &m); err != nil || m == nil {
			m = map[string]json.RawMessage{}
		}
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v) // strings and string slices always marshal
		m[k] = b
	}
	if n.Spec.Instructions != "" {
		set("instructions", n.Spec.Instructions)
	}
	if n.Class == ClassTask {
		set("output_label", n.Label)
	}
	if n.Spec.Criteria != "" {
		set("criteria", n.Spec.Criteria)
	}
	if len(n.Spec.Params) > 0 {
		set("params", n.Spec.Params)
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // keys sorted: deterministic
	return b
}
