package dag

import (
	"bytes"
	"encoding/json"
)

// Built-in node kinds. They are plugins like any other (plugins/dag), but
// the scheduler knows how their verdicts are formed.
const (
	KindTask   = "task"
	KindBinary = "binary"
	KindChoice = "choice"
)

// Aggregations over fired leaves.
const (
	AggregateMin  = "min"
	AggregateMean = "mean"
	AggregateMax  = "max"
)

// Reason modes.
const (
	// ReasonPath summarises the path taken (Result.Reason).
	ReasonPath = "path"
	// ReasonJudge lets the engine ask the judge for prose from the path.
	ReasonJudge = "judge"
)

// Spec is a dag metric's configuration as written. Parse and ParseJSON
// build it; Validate turns it into a Graph.
type Spec struct {
	// Aggregate is how several fired leaves combine: min (default), mean, max.
	Aggregate string `json:"aggregate,omitempty"`
	// Reason is path (default) or judge.
	Reason string `json:"reason,omitempty"`
	// Roots, when set, are the nodes a case starts at; default: the nodes
	// without parents.
	Roots []string `json:"roots,omitempty"`
	// Nodes in configuration order.
	Nodes []NodeSpec `json:"nodes"`

	// File and Line locate the spec in its source, for messages; Line is 0
	// when unknown.
	File string `json:"-"`
	Line int    `json:"-"`
}

// NodeSpec is one node as written.
type NodeSpec struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Config is handed to the node kind verbatim (a JSON object).
	Config json.RawMessage `json:"config,omitempty"`
	// Instructions of a task node.
	Instructions string `json:"instructions,omitempty"`
	// OutputLabel names a task node's output for the nodes that read it;
	// default: the node id.
	OutputLabel string `json:"output_label,omitempty"`
	// Criteria of a binary or choice node.
	Criteria string `json:"criteria,omitempty"`
	// Params are the test-case fields the node reads.
	Params []string `json:"params,omitempty"`
	// Children are data edges: these nodes receive this node's output.
	Children []string `json:"children,omitempty"`
	// Verdicts map each verdict to its outcome, in configuration order.
	Verdicts Verdicts `json:"verdicts,omitempty"`

	Line int `json:"-"`
}

// Verdicts is an ordered verdict → outcome map. It encodes as a JSON object
// in order.
type Verdicts []Verdict

// Verdict is one verdict of a decision node and what it leads to: exactly
// one of Score, Then, Metric.
type Verdict struct {
	// Key is the verdict string ("true", "false", a choice option), trimmed.
	Key string
	// Score (0–10) ends the path with Score/10.
	Score *float64
	// Then is a control edge to another node.
	Then string
	// Metric ends the path with a configured metric's score.
	Metric string

	Line int
}

// outcome is the JSON shape of a verdict's value.
type outcome struct {
	Score  *float64 `json:"score,omitempty"`
	Then   string   `json:"then,omitempty"`
	Metric string   `json:"metric,omitempty"`
}

// MarshalJSON writes the verdicts as one JSON object, keys in order.
func (vs Verdicts) MarshalJSON() ([]byte, error) {
	if vs == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(v.Key)
		if err != nil {
			return nil, err
		}
		o, err := json.Marshal(outcome{Score: v.Score, Then: v.Then, Metric: v.Metric})
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(o)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a spec from JSON, as strictly as Parse decodes YAML
// (unknown keys, duplicate keys and wrong types are errors).
func (s *Spec) UnmarshalJSON(data []byte) error {
	parsed, err := ParseJSON(data, s.File)
	if err != nil {
		return err
	}
	*s = *parsed
	return nil
}

// Get returns the verdict with the given key.
func (vs Verdicts) Get(key string) (Verdict, bool) {
	for _, v := range vs {
		if v.Key == key {
			return v, true
		}
	}
	return Verdict{}, false
}

// Keys returns the verdict keys in configuration order.
func (vs Verdicts) Keys() []string {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = v.Key
	}
	return keys
}

// IsLeaf reports whether the verdict ends a path (score or metric).
func (v Verdict) IsLeaf() bool { return v.Then == "" && (v.Score != nil || v.Metric != "") }
