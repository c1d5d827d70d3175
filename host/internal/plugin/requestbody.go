package plugin

import (
	"bytes"
	"encoding/json"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/abijson"
)

// requestEncoder makes a sandboxed call's request: json.Marshal's bytes,
// written by hand for a measure request (internal/abijson), by
// encoding/json for anything else and for what abijson leaves to it.
// Through encoding/json a measure request cost as much host CPU as a
// trivial guest's whole call: reflection over the case, and the metric's
// config and prepared steps compacted again for every case although they
// are the same bytes every time. The encoder remembers what Marshal
// writes of the last config and prepared value it saw, compared by
// content, so a changed value is never answered with another's bytes. It
// is safe for concurrent use.
type requestEncoder struct {
	config, prepared rawMemo
}

// rawMemo is the last json.RawMessage seen and what json.Marshal writes of
// it; the pair is immutable once published.
type rawMemo struct {
	last atomic.Pointer[rawAsMarshalled]
}

type rawAsMarshalled struct{ raw, marshalled []byte }

// marshal is json.Marshal(raw) for a non-empty raw, from the memo when raw
// is the value it holds; ok is false when Marshal refuses raw.
func (m *rawMemo) marshal(raw json.RawMessage) (b []byte, ok bool) {
	if len(raw) == 0 {
		return nil, true // omitempty: not written
	}
	if p := m.last.Load(); p != nil && bytes.Equal(p.raw, raw) {
		return p.marshalled, true
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	m.last.Store(&rawAsMarshalled{raw: bytes.Clone(raw), marshalled: b})
	return b, true
}

// encode is json.Marshal(req).
func (e *requestEncoder) encode(req any) ([]byte, error) {
	if r, ok := req.(*abi.MeasureRequest); ok {
		if b, ok := e.measureRequest(r); ok {
			return b, nil
		}
	}
	return json.Marshal(req)
}

func (e *requestEncoder) measureRequest(r *abi.MeasureRequest) ([]byte, bool) {
	config, ok := e.config.marshal(r.Config)
	if !ok {
		return nil, false
	}
	prepared, ok := e.prepared.marshal(r.Prepared)
	if !ok {
		return nil, false
	}
	c := &r.Case
	size := 160 + len(r.Kind) + len(r.Metric) + len(r.JudgeModel) + len(config) + len(prepared) +
		len(c.ID) + len(c.Input) + len(c.ActualOutput) + len(c.ExpectedOutput)
	return abijson.AppendMeasureRequest(make([]byte, 0, size), r, config, prepared)
}
