package wasm

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// Direct I/O (ABI minor 3, abi/v1/README.md §4.1). Extism hands a guest
// its input through the kernel's memory, and Extism's PDKs copy it out one
// host call per 8 bytes (and write the output back the same way), each
// leaving the guest's compiled code for Go and back. A guest that exports
// anvil_io offers a buffer in its own linear memory instead: the host
// copies the request there in one write and reads the answer from where
// the guest says it is, in one bounded read. A guest without the export
// (any third-party Extism guest, an SDK older than minor 3) is called the
// Extism way, and a guest with it still works under a host that never
// calls it.
//
// The control block anvil_io points at: six little-endian u32.
const (
	ioInPtr  = 0  // guest: address of the input buffer
	ioInCap  = 4  // guest: its size in bytes
	ioInLen  = 8  // host: length of the request it wrote there
	ioState  = 12 // host: ioRequest before the call; guest: ioIdle, ioAnswer
	ioOutPtr = 16 // guest: address of the answer
	ioOutLen = 20 // guest: its length in bytes
	ioSize   = 24

	ioIdle    = 0
	ioRequest = 1 // the request is in the buffer; answer in linear memory
	ioAnswer  = 2 // the answer is at out_ptr, out_len
)

// usesDirectIO says whether the host uses a module's anvil_io: it must
// export it and say, with abi_minor >= 3, that it means the minor's
// contract (an older module's export of that name is not called).
func usesDirectIO(exports map[string]bool, d abi.Descriptor) bool {
	return exports[abi.ExportIO] && d.ABIMinor >= 3
}

// openIO asks a warm instance for its control block, so that its calls
// use direct I/O. The instance is discarded by the caller on error.
func (w *wasmPlugin) openIO(ctx context.Context, in *instance) error {
	var def api.FunctionDefinition
	if f := in.export(abi.ExportIO); f != nil {
		def = f.Definition()
	}
	i32 := []api.ValueType{api.ValueTypeI32}
	if def == nil || !slices.Equal(def.ParamTypes(), i32) || !slices.Equal(def.ResultTypes(), i32) {
		return abi.Errorf(abi.CodeABI, "%s is not a function (i32) -> i32", abi.ExportIO)
	}
	ctx, cancel := context.WithTimeout(ctx, max(w.opts.Limits.Timeout.Std(), transport.MinWarmup))
	defer cancel()
	g := transport.NewGuard(nil, w.info, w.opts, w.logger)
	defer g.Finish(ctx)
	return in.growIO(withGuard(ctx, g), 0)
}

// growIO calls anvil_io(size) and keeps the control block's address.
func (in *instance) growIO(ctx context.Context, size int) error {
	res, err := in.callRaw(ctx, abi.ExportIO, api.EncodeI32(int32(size)))
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return in.classify(ctx, abi.ExportIO, 0, err)
	}
	addr := api.DecodeU32(res[0])
	if _, ok := in.guest.Memory().Read(addr, ioSize); !ok || addr == 0 {
		return abi.Errorf(abi.CodeABI, "%s returned %d, not the address of a %d-byte control block in linear memory", abi.ExportIO, addr, ioSize)
	}
	in.io = addr
	return nil
}

// putInput writes input into the guest's buffer and marks the request,
// growing the buffer through anvil_io when it is too small. Any error
// discards the instance.
func (in *instance) putInput(ctx context.Context, input []byte) error {
	mem := in.guest.Memory()
	ctrl, ok := mem.Read(in.io, ioSize)
	if !ok {
		return abi.Errorf(abi.CodeABI, "%s control block at %d is out of bounds", abi.ExportIO, in.io)
	}
	if uint64(len(input)) > uint64(le32(ctrl, ioInCap)) {
		if len(input) > 1<<31-1 {
			return abi.Errorf(abi.CodeABI, "request of %d bytes does not fit a Wasm32 buffer", len(input))
		}
		if err := in.growIO(ctx, len(input)); err != nil {
			return err
		}
		if ctrl, ok = mem.Read(in.io, ioSize); !ok {
			return abi.Errorf(abi.CodeABI, "%s control block at %d is out of bounds", abi.ExportIO, in.io)
		}
		if uint64(len(input)) > uint64(le32(ctrl, ioInCap)) {
			return abi.Errorf(abi.CodeABI, "%s(%d) offered a buffer of %d bytes", abi.ExportIO, len(input), le32(ctrl, ioInCap))
		}
	}
	// The guest chose where its buffer is; Write refuses anything outside
	// its linear memory, so a wrong address can only hurt the guest.
	if !mem.Write(le32(ctrl, ioInPtr), input) {
		return abi.Errorf(abi.CodeABI, "%s buffer [%d, +%d) is out of bounds", abi.ExportIO, le32(ctrl, ioInPtr), len(input))
	}
	binary.LittleEndian.PutUint32(ctrl[ioInLen:], uint32(len(input)))
	binary.LittleEndian.PutUint32(ctrl[ioState:], ioRequest)
	binary.LittleEndian.PutUint32(ctrl[ioOutPtr:], 0)
	binary.LittleEndian.PutUint32(ctrl[ioOutLen:], 0)
	return nil
}

// takeOutput returns the answer a guest left in its linear memory (a
// copy, bounded by maxOut before anything is read), or ok false when it
// answered through Extism instead.
func (in *instance) takeOutput(fn string, maxOut int) (out []byte, ok bool, err error) {
	mem := in.guest.Memory()
	ctrl, found := mem.Read(in.io, ioSize)
	if !found {
		return nil, false, abi.Errorf(abi.CodeABI, "%s: %s control block at %d is out of bounds", fn, abi.ExportIO, in.io)
	}
	if le32(ctrl, ioState) != ioAnswer {
		return nil, false, nil
	}
	ptr, n := le32(ctrl, ioOutPtr), le32(ctrl, ioOutLen)
	if uint64(n) > uint64(maxOut) {
		return nil, false, abi.Errorf(abi.CodeOutputTooLarge, "%s output is %d bytes, max_output_bytes is %d", fn, n, maxOut)
	}
	view, found := mem.Read(ptr, n)
	if !found {
		return nil, false, abi.Errorf(abi.CodeABI, "%s output [%d, +%d) is out of bounds", fn, ptr, n)
	}
	return append([]byte(nil), view...), true, nil
}

func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// errIOSetup names a failed openIO for the load and pool errors.
func errIOSetup(err error) error { return fmt.Errorf("direct I/O (%s): %w", abi.ExportIO, err) }
