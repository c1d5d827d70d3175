package plugin

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentanvil/anvil/abi"
)

// remote is what the transports that cross a boundary (wasm, process) have
// in common: one operation by name, JSON in and out, a check of the result
// before it is trusted. The typed calls below are written once for both.
type remote interface {
	// invoke runs operation name with req and decodes into out; check, when
	// set, validates the decoded result (an error is an ABI violation).
	invoke(ctx context.Context, svc Services, name string, what doing, req, out any, check func() error) error
	// own stamps the plugin on an error the guest returned in its result.
	own(e *abi.Error) *abi.Error
}

// doing names the call being made, for its errors ("measure case "c1"
// (metric "m", kind exact_match)"). It is formatted only when an error
// needs it: a fmt.Sprintf per call was 1% of a Wasm run's CPU.
type doing struct {
	op                           operation
	metric, caseID, nodeID, kind string
}

type operation uint8

const (
	opMeasure operation = iota
	opPrepare
	opNode
)

func (d doing) String() string {
	switch d.op {
	case opPrepare:
		return fmt.Sprintf("prepare metric %q (kind %s)", d.metric, d.kind)
	case opNode:
		return fmt.Sprintf("node %q case %q (kind %s)", d.nodeID, d.caseID, d.kind)
	}
	return fmt.Sprintf("measure case %q (metric %q, kind %s)", d.caseID, d.metric, d.kind)
}

// operations names a transport's three operations.
type operations struct{ prepare, measure, node string }

func prepareVia(ctx context.Context, r remote, ops operations, svc Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	var res abi.PrepareResult
	what := doing{op: opPrepare, metric: req.Metric, kind: req.Kind}
	if err := r.invoke(ctx, svc, ops.prepare, what, req, &res, nil); err != nil {
		return nil, err
	}
	res.Error = r.own(res.Error)
	return &res, nil
}

func measureVia(ctx context.Context, r remote, ops operations, svc Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	var res abi.MeasureResult
	what := doing{op: opMeasure, caseID: req.Case.ID, metric: req.Metric, kind: req.Kind}
	if err := r.invoke(ctx, svc, ops.measure, what, req, &res, func() error { return checkMeasure(&res) }); err != nil {
		return nil, err
	}
	res.Error = r.own(res.Error)
	return &res, nil
}

func nodeVia(ctx context.Context, r remote, ops operations, svc Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	var res abi.NodeResult
	what := doing{op: opNode, nodeID: req.NodeID, caseID: req.Case.ID, kind: req.Kind}
	check := func() error {
		if res.Error == nil && len(req.Verdicts) > 0 && !slices.Contains(req.Verdicts, res.Verdict) {
			return fmt.Errorf("verdict %q is not one of %q", res.Verdict, req.Verdicts)
		}
		return nil
	}
	if err := r.invoke(ctx, svc, ops.node, what, req, &res, check); err != nil {
		return nil, err
	}
	res.Error = r.own(res.Error)
	return &res, nil
}
