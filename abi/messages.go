package abi

import "encoding/json"

// PrepareRequest is the input of anvil_prepare, called once per configured
// metric per run, before any case. Work that does not depend on a case
// (G-Eval's evaluation steps) belongs here, so it is done once, not N times.
type PrepareRequest struct {
	// Kind is the metric kind to prepare.
	Kind string `json:"kind"`
	// Metric is the configured metric's name, for logs.
	Metric string `json:"metric"`
	// Config is the metric's config object, as validated against the kind's ConfigSchema.
	Config json.RawMessage `json:"config,omitempty"`
	// JudgeModel is the model of the metric's judge ("" when none is configured);
	// work cached by the guest must be keyed on it.
	JudgeModel string `json:"judge_model,omitempty"`
}

// PrepareResult is the output of anvil_prepare.
type PrepareResult struct {
	// State is handed back verbatim in every MeasureRequest.Prepared of the run.
	State json.RawMessage `json:"state,omitempty"`
	// Details are recorded once in the run summary.
	Details json.RawMessage `json:"details,omitempty"`
	// Error is set when the guest could not prepare; every case of that metric
	// is then recorded with this error.
	Error *Error `json:"error,omitempty"`
}

// MeasureRequest is the input of anvil_measure: score one case.
type MeasureRequest struct {
	Kind   string          `json:"kind"`
	Metric string          `json:"metric"`
	Config json.RawMessage `json:"config,omitempty"`
	// Prepared is PrepareResult.State of this metric, if the kind prepares.
	Prepared json.RawMessage `json:"prepared,omitempty"`
	// Threshold is the configured pass mark in [0,1]; a kind may impose its
	// own (strict mode) and says so in MeasureResult.Threshold.
	Threshold  float64  `json:"threshold"`
	JudgeModel string   `json:"judge_model,omitempty"`
	Case       TestCase `json:"case"`
}

// MeasureResult is the output of anvil_measure.
type MeasureResult struct {
	// Score is normalised to [0,1]; nil when Error is set.
	Score *float64 `json:"score,omitempty"`
	// Success is advisory: the guest's opinion of Score >= Threshold. The
	// host decides pass/fail itself from Score, the configured threshold
	// and strict mode, and records a disagreement on the result.
	Success bool `json:"success"`
	// Threshold is advisory: the threshold the guest had in mind. The host
	// applies the configured one (1 under strict_mode) whatever this says.
	Threshold float64 `json:"threshold"`
	Reason    string  `json:"reason,omitempty"`
	// ScoreMode says how a judged score was obtained: "weighted" (logprobs),
	// "raw" (the integer the judge wrote), "sampled" (mean of n samples) or
	// "" for deterministic kinds.
	ScoreMode string `json:"score_mode,omitempty"`
	// Details are kind-specific and recorded with the case.
	Details json.RawMessage `json:"details,omitempty"`
	// Error is a metric error: the guest could not score this case. The
	// instance stays healthy.
	Error *Error `json:"error,omitempty"`
}

// NodeInput is one parent task's output, handed to a DAG node.
type NodeInput struct {
	NodeID string `json:"node_id"`
	Label  string `json:"label"`
	Output string `json:"output"`
}

// NodeRequest is the input of anvil_node: run one DAG node on one case.
type NodeRequest struct {
	Kind   string          `json:"kind"`
	NodeID string          `json:"node_id"`
	Config json.RawMessage `json:"config,omitempty"`
	// Inputs are the outputs of the node's task parents, in configuration order.
	Inputs []NodeInput `json:"inputs,omitempty"`
	// Verdicts the node may return (binary: ["false","true"]; choice: the
	// configured strings). Empty for task nodes, which return Output.
	Verdicts   []string `json:"verdicts,omitempty"`
	JudgeModel string   `json:"judge_model,omitempty"`
	Case       TestCase `json:"case"`
}

// NodeResult is the output of anvil_node.
type NodeResult struct {
	// Verdict is one of NodeRequest.Verdicts (decision nodes).
	Verdict string `json:"verdict,omitempty"`
	// Output is the text a task node produced.
	Output string `json:"output,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Details are kind-specific.
	Details json.RawMessage `json:"details,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// LogRecord is the input of the anvil_log host function.
type LogRecord struct {
	// Level is "debug", "info", "warn" or "error".
	Level   string         `json:"level"`
	Message string         `json:"message"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}
