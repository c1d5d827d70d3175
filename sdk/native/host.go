package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// processHost implements sdk.Host over the host's callback service, for
// one invocation: every callback carries the invocation's token, so the
// host applies that invocation's grants and budgets.
type processHost struct {
	conn    *grpc.ClientConn
	dialErr error
	token   string
}

var (
	_ sdk.Host     = (*processHost)(nil)
	_ sdk.Embedder = (*processHost)(nil)
)

// Judge sends one batch to the host. A batch-level refusal comes back as
// the host's *abi.Error, code intact, exactly as in the other transports.
func (h *processHost) Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	in, err := json.Marshal(abi.JudgeBatch{Requests: reqs})
	if err != nil {
		return nil, abi.Errorf(abi.CodeABI, "encode judge batch: %v", err)
	}
	out, err := h.call(ctx, MethodHostJudge, in)
	if err != nil {
		return nil, callbackError("judge", err)
	}
	var res abi.JudgeBatchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, abi.Errorf(abi.CodeABI, "decode judge result: %v", err)
	}
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Responses, nil
}

// Embed sends one embed request to the host. A host older than ABI minor
// 5 has no Embed method: that is capability_denied, saying so.
func (h *processHost) Embed(ctx context.Context, req abi.EmbedRequest) ([][]float64, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, abi.Errorf(abi.CodeABI, "encode embed request: %v", err)
	}
	out, err := h.call(ctx, MethodHostEmbed, in)
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return nil, abi.Errorf(abi.CodeCapability, "the host does not embed texts (its callback service has no Embed: older than ABI minor 5)")
		}
		return nil, callbackError("embed", err)
	}
	var res abi.EmbedResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, abi.Errorf(abi.CodeABI, "decode embed result: %v", err)
	}
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Vectors, nil
}

// Log sends one record to the host, synchronously, so records keep their
// order. Attribute values that do not encode as JSON are sent as their fmt
// representation; a record the host cannot take is dropped.
func (h *processHost) Log(ctx context.Context, level slog.Level, msg string, attrs ...any) {
	rec := abi.LogRecord{Level: sdk.LevelName(level), Message: msg, Attrs: sdk.AttrMap(attrs...)}
	b, err := json.Marshal(rec)
	if err != nil {
		for k, v := range rec.Attrs {
			rec.Attrs[k] = fmt.Sprint(v)
		}
		if b, err = json.Marshal(rec); err != nil {
			return
		}
	}
	_, _ = h.call(ctx, MethodHostLog, b)
}

func (h *processHost) call(ctx context.Context, method string, in []byte) ([]byte, error) {
	if h.dialErr != nil {
		return nil, h.dialErr
	}
	if h.conn == nil {
		return nil, errors.New("the host named no callback service in this request")
	}
	ctx = metadata.AppendToOutgoingContext(ctx, MetaInvocation, h.token)
	out := new(wrapperspb.BytesValue)
	if err := h.conn.Invoke(ctx, method, wrapperspb.Bytes(in), out); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

// callbackError types a callback that failed in transport: too large is
// output_too_large (the host's cap on what a guest may send), a spent
// deadline is a timeout, anything else a broken ABI.
func callbackError(what string, err error) *abi.Error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.ResourceExhausted:
		return abi.Errorf(abi.CodeOutputTooLarge, "%s callback refused by the host: %s", what, st.Message())
	case codes.DeadlineExceeded, codes.Canceled:
		return abi.Errorf(abi.CodeTimeout, "%s callback: %s", what, st.Message())
	}
	return abi.Errorf(abi.CodeABI, "%s callback failed: %v", what, err)
}
