package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentanvil/anvil/abi"
)

// Remote is what the transports that cross a boundary (wasm, process) have
// in common: one operation by name, JSON in and out, a check of the result
// before it is trusted. The typed calls below are written once for both.
type Remote interface {
	// invoke runs operation name with req and decodes into out; check, when
	// set, validates the decoded result (an error is an ABI violation).
	Invoke(ctx context.Context, svc Services, name string, what Doing, req, out any, check func() error) error
	// own stamps the plugin on an error the guest returned in its result.
	Own(e *abi.Error) *abi.Error
}

// Doing names the call being made, for its errors ("measure case "c1"
// (metric "m", kind exact_match)"). It is formatted only when an error
// needs it: a fmt.Sprintf per call was 1% of a Wasm run's CPU.
type Doing struct {
	op                           operation
	metric, caseID, nodeID, kind string
}

type operation uint8

const (
	opMeasure operation = iota
	opPrepare
	opNode
)

func (d Doing) String() string {
	switch d.op {
	case opPrepare:
		return fmt.Sprintf("prepare metric %q (kind %s)", d.metric, d.kind)
	case opNode:
		return fmt.Sprintf("node %q case %q (kind %s)", d.nodeID, d.caseID, d.kind)
	}
	return fmt.Sprintf("measure case %q (metric %q, kind %s)", d.caseID, d.metric, d.kind)
}

// Operations names a transport's three operations.
type Operations struct{ Prepare, Measure, Node string }

// PrepareVia, MeasureVia and NodeVia are a remote transport's Prepare,
// Measure and Node: the call by name, then the result checked and owned.
func PrepareVia(ctx context.Context, r Remote, ops Operations, svc Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	var res abi.PrepareResult
	what := Doing{op: opPrepare, metric: req.Metric, kind: req.Kind}
	if err := r.Invoke(ctx, svc, ops.Prepare, what, req, &res, nil); err != nil {
		return nil, err
	}
	res.Error = r.Own(res.Error)
	return &res, nil
}

func MeasureVia(ctx context.Context, r Remote, ops Operations, svc Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	var res abi.MeasureResult
	what := Doing{op: opMeasure, caseID: req.Case.ID, metric: req.Metric, kind: req.Kind}
	if err := r.Invoke(ctx, svc, ops.Measure, what, req, &res, func() error { return CheckMeasure(&res) }); err != nil {
		return nil, err
	}
	res.Error = r.Own(res.Error)
	return &res, nil
}

func NodeVia(ctx context.Context, r Remote, ops Operations, svc Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	var res abi.NodeResult
	what := Doing{op: opNode, nodeID: req.NodeID, caseID: req.Case.ID, kind: req.Kind}
	check := func() error {
		if res.Error == nil && len(req.Verdicts) > 0 && !slices.Contains(req.Verdicts, res.Verdict) {
			return fmt.Errorf("verdict %q is not one of %q", res.Verdict, req.Verdicts)
		}
		return nil
	}
	if err := r.Invoke(ctx, svc, ops.Node, what, req, &res, check); err != nil {
		return nil, err
	}
	res.Error = r.Own(res.Error)
	return &res, nil
}

// CheckMeasure applies the rules every measure result must meet, whatever
// language the guest is written in.
func CheckMeasure(r *abi.MeasureResult) error {
	if r.Score != nil && !(*r.Score >= 0 && *r.Score <= 1) {
		return fmt.Errorf("score %v is outside [0,1]", *r.Score)
	}
	if !(r.Threshold >= 0 && r.Threshold <= 1) {
		return fmt.Errorf("threshold %v is outside [0,1]", r.Threshold)
	}
	if r.Error == nil && r.Score == nil {
		return errors.New("neither score nor error")
	}
	return nil
}
