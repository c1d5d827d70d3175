//go:build wasip1

package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/extism/go-pdk"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// The host functions. Offsets are Extism memory blocks (see the package doc).
//
//go:wasmimport extism:host/user anvil_judge
func hostJudge(request uint64) uint64

//go:wasmimport extism:host/user anvil_log
func hostLog(record uint64)

// hostEmbed (ABI minor 5) is referenced only from wasmHost.Embed, so a
// guest that never embeds does not import it (the linker drops the
// method with the import) and still loads on hosts older than minor 5.
//
//go:wasmimport extism:host/user anvil_embed
func hostEmbed(request uint64) uint64

// wasmHost implements sdk.Host over the host functions.
type wasmHost struct{}

// Judge sends one batch through anvil_judge. A batch-level refusal comes
// back as the host's *abi.Error, code intact, so a kind sees exactly what
// it would see in-process.
func (wasmHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	in, err := json.Marshal(abi.JudgeBatch{Requests: reqs})
	if err != nil {
		return nil, abi.Errorf(abi.CodeABI, "encode judge batch: %v", err)
	}
	reqMem := pdk.AllocateBytes(in)
	off := hostJudge(reqMem.Offset())
	reqMem.Free()
	if off == 0 {
		return nil, abi.Errorf(abi.CodeABI, "host returned no judge result")
	}
	resMem := pdk.FindMemory(off)
	out := resMem.ReadBytes()
	resMem.Free()
	var res abi.JudgeBatchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, abi.Errorf(abi.CodeABI, "decode judge result: %v", err)
	}
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Responses, nil
}

// Embed sends one request through anvil_embed.
func (wasmHost) Embed(_ context.Context, req abi.EmbedRequest) ([][]float64, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, abi.Errorf(abi.CodeABI, "encode embed request: %v", err)
	}
	reqMem := pdk.AllocateBytes(in)
	off := hostEmbed(reqMem.Offset())
	reqMem.Free()
	if off == 0 {
		return nil, abi.Errorf(abi.CodeABI, "host returned no embed result")
	}
	resMem := pdk.FindMemory(off)
	out := resMem.ReadBytes()
	resMem.Free()
	var res abi.EmbedResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, abi.Errorf(abi.CodeABI, "decode embed result: %v", err)
	}
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Vectors, nil
}

// Log sends one record through anvil_log. Attribute values that do not
// encode as JSON are sent as their fmt representation.
func (wasmHost) Log(_ context.Context, level slog.Level, msg string, attrs ...any) {
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
	mem := pdk.AllocateBytes(b)
	hostLog(mem.Offset())
	mem.Free()
}
