package abi

import (
	"fmt"
	"strings"
)

// Code classifies an Error.
type Code string

const (
	// CodeMetric: the guest could not score this input and said so; its
	// instance is healthy.
	CodeMetric Code = "metric_error"
	// CodeInvalidConfig: the metric or node config does not fit the kind.
	CodeInvalidConfig Code = "invalid_config"
	// CodeMissingField: the case lacks a field the kind needs; the host
	// records the case as skipped for that metric.
	CodeMissingField Code = "missing_field"
	// CodeTrap: the guest panicked, ran out of memory, or misused the ABI;
	// its instance was discarded.
	CodeTrap Code = "trap"
	// CodeTimeout: the invocation passed its wall-clock deadline; the
	// instance was discarded.
	CodeTimeout Code = "timeout"
	// CodeABI: the guest broke the ABI contract (bad JSON, missing export,
	// wrong marker, unknown kind).
	CodeABI Code = "abi_violation"
	// CodeOutputTooLarge: the guest's output passed the max output bytes limit.
	CodeOutputTooLarge Code = "output_too_large"
	// CodeBudget: a per-invocation judge-call or judge-token budget is spent.
	CodeBudget Code = "budget_exhausted"
	// CodeCapability: the guest asked for a host service it was not granted.
	CodeCapability Code = "capability_denied"
	// CodeJudge: the judge failed (unreachable, refused, unparseable reply
	// after repair) — a fault of the judge, not a metric result.
	CodeJudge Code = "judge_error"
	// CodeCacheMiss: replay-only cache mode and the request is not recorded.
	CodeCacheMiss Code = "cache_miss"
	// CodeTruncated: the judge stopped at its token limit (finish_reason
	// "length"); the reply is incomplete, and a repair call cannot help.
	CodeTruncated Code = "judge_truncated"
	// CodeRequestTooLarge: the request is larger than its judge accepts
	// (max_input_tokens, or the whole tokens_per_minute bucket); it was not
	// sent. The message names the size and the limit.
	CodeRequestTooLarge Code = "request_too_large"
	// CodeJudgeUnavailable: the judge's circuit breaker is open after
	// consecutive failures that retrying cannot fix (connection refused,
	// DNS, TLS, 401/403); the request was not sent. The run cannot verify
	// anything that needs this judge.
	CodeJudgeUnavailable Code = "judge_unavailable"
	// CodeFuelExhausted: a Wasm guest spent its invocation's max_fuel (a
	// count of its own instructions, bulk operations by their size, the
	// same on every machine); the instance was discarded.
	CodeFuelExhausted Code = "fuel_exhausted"
)

// Error is the typed error of the ABI. Errors that cross the boundary are
// data, not Go errors, so every transport carries them the same way.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Plugin is "name@version" and Digest "sha256:…" of the plugin the error
	// concerns; the host fills them in.
	Plugin string `json:"plugin,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Field names the test-case field (missing_field) or config field (invalid_config).
	Field string `json:"field,omitempty"`
	// Stderr is the guest's captured stderr (bounded), for traps.
	Stderr string `json:"stderr,omitempty"`
	// Retryable is true for faults worth retrying in a later run: the
	// judge's (rate limits, outages) or the infrastructure's (a cluster
	// worker lost, a transport that timed out). `--resume` evaluates a
	// case with such an error again. Host-owned: a guest cannot set it.
	Retryable bool `json:"retryable,omitempty,omitzero"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	switch {
	case e.Plugin != "" && e.Digest != "":
		s = fmt.Sprintf("plugin %s@%s: %s", e.Plugin, shortDigest(e.Digest), s)
	case e.Plugin != "":
		s = fmt.Sprintf("plugin %s: %s", e.Plugin, s)
	}
	if e.Stderr != "" {
		s += "\nguest stderr:\n" + e.Stderr
	}
	return s
}

// Errorf builds an Error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// shortDigest keeps "sha256:" and 12 hex digits, enough to tell modules
// apart in a message; other digests (inproc:name@version) stay whole.
func shortDigest(d string) string {
	if strings.HasPrefix(d, "sha256:") && len(d) > 19 {
		return d[:19]
	}
	return d
}
