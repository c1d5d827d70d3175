// Package dag is the host's DAG scheduler: the graph model of a dag metric,
// its strict parsing and validation, the per-case walk, and Mermaid
// rendering.
//
// A dag metric is a decision graph the judge walks one small question at a
// time. Nodes are plugins' node kinds: the built-ins task (produces output),
// binary (verdicts false/true) and choice (configured verdicts), and code
// nodes such as json_valid (fixed verdicts from their KindDescriptor) or
// output-producing plugin kinds. A verdict leads to exactly one of a score
// (0–10), another node (then: a control edge) or a configured child metric.
// A task's children receive its output (data edges).
//
//	aggregate: min            # min (default) | mean | max over fired leaves
//	reason: path              # path (default) | judge
//	roots: [extract]          # optional; default: nodes without parents
//	nodes:
//	  - id: extract
//	    kind: task
//	    instructions: Extract every claim the answer makes.
//	    output_label: Claims
//	    params: [actual_output]
//	    children: [has_answer]
//	  - id: has_answer
//	    kind: binary
//	    criteria: Does the answer address the question?
//	    params: [input]
//	    verdicts:
//	      "true": {metric: helpfulness}
//	      "false": {score: 2}
//
// Invariants. A Graph only exists validated: acyclic, every reference
// resolved, verdict sets complete, every node the roots lead to able to run, and
// every verdict able to lead to a score. Evaluate runs each node at most once per
// case (data edges AND, control edges OR, dead branches never run) and its
// Result — score, path, leaves — depends only on the verdicts and outputs
// the Runner returns, never on scheduling: leaves are sorted by node id then
// verdict before aggregation, the path is in topological order with ties
// broken by configuration order. The package knows nothing of judges or
// plugins: the engine runs nodes through Runner.
package dag
