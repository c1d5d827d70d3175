package wasm

import (
	"context"
	"fmt"
	"slices"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/wasmmeter"
)

// The Extism kernel is a Wasm module of its own, one instance per guest
// instance, holding the guest's input, output, error and every memory
// block guest and host pass each other. Its code is Extism's and is not
// metered; what keeps its calls bounded is that its data stays intact. A
// guest reaches the kernel only through the functions below: the metering
// rewrite (wasmmeter.Options.Redirect) sends the guest's
// extism:host/env imports of kernel functions to kernelModule instead,
// where each is the kernel's own export called directly, except that
//
//   - store_u8 and store_u64 must land inside a block the guest allocated
//     (or the host handed it) and has not freed: a store anywhere else could
//     rewrite the kernel's block headers, and a corrupt header sends the
//     kernel's allocator into an endless walk, in code no deadline reaches;
//   - free must name such a block, for the same reason;
//   - reset forgets every block, as the kernel does.
//
// The kernel's exports are looked up once per instance (go-sdk looks one
// up on every call, which builds a fresh call engine each time).
const kernelModule = "anvil:host/kernel"

// kernelExports are the kernel functions a guest may import from
// extism:host/env, by name, with their signatures. The functions the
// go-sdk implements in Go over the kernel (config_get, var_get, var_set,
// http_*, log_*, get_log_level) stay the go-sdk's: bounds.go watches the
// ones that read a block.
var kernelExports = map[string]kernelSig{
	"alloc":          {[]api.ValueType{i64}, []api.ValueType{i64}},
	"free":           {[]api.ValueType{i64}, nil},
	"length":         {[]api.ValueType{i64}, []api.ValueType{i64}},
	"length_unsafe":  {[]api.ValueType{i64}, []api.ValueType{i64}},
	"load_u8":        {[]api.ValueType{i64}, []api.ValueType{i32}},
	"load_u64":       {[]api.ValueType{i64}, []api.ValueType{i64}},
	"input_load_u8":  {[]api.ValueType{i64}, []api.ValueType{i32}},
	"input_load_u64": {[]api.ValueType{i64}, []api.ValueType{i64}},
	"store_u8":       {[]api.ValueType{i64, i32}, nil},
	"store_u64":      {[]api.ValueType{i64, i64}, nil},
	"input_set":      {[]api.ValueType{i64, i64}, nil},
	"input_length":   {nil, []api.ValueType{i64}},
	"input_offset":   {nil, []api.ValueType{i64}},
	"output_set":     {[]api.ValueType{i64, i64}, nil},
	"output_length":  {nil, []api.ValueType{i64}},
	"output_offset":  {nil, []api.ValueType{i64}},
	"error_set":      {[]api.ValueType{i64}, nil},
	"error_get":      {nil, []api.ValueType{i64}},
	"reset":          {nil, nil},
	"memory_bytes":   {nil, []api.ValueType{i64}},
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

type kernelSig struct{ params, results []api.ValueType }

// kernelRedirects is the Redirect option of the metering rewrite.
func kernelRedirects() map[wasmmeter.Import]string {
	m := make(map[wasmmeter.Import]string, len(kernelExports))
	for name := range kernelExports {
		m[wasmmeter.Import{Module: envModule, Name: name}] = kernelModule
	}
	return m
}

// kernel is one instance's Extism kernel, as the host reaches it.
type kernel struct {
	mod api.Module
	mem api.Memory
	fns map[string]api.Function
	// blocks the guest may write into and free.
	blocks blockTable
	// dirty: something allocated in the kernel since it was last reset.
	dirty bool
	// answered: the guest set an output or an error since the last reset.
	answered bool
}

// bind attaches the kernel instance go-sdk created for this guest
// instance (it travels in the context of every call go-sdk makes).
func (k *kernel) bind(ctx context.Context) error {
	if k.mod != nil {
		return nil
	}
	mod, ok := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if !ok || mod == nil {
		return fmt.Errorf("no Extism kernel in the call's context")
	}
	k.fns = make(map[string]api.Function, len(kernelExports))
	for name := range kernelExports {
		if name == "load_u64" || name == "store_u64" || name == "input_load_u64" {
			continue // plain memory accesses, done in Go
		}
		f := mod.ExportedFunction(name)
		if f == nil {
			return fmt.Errorf("the Extism kernel lacks %s", name)
		}
		k.fns[name] = f
	}
	k.mod, k.mem = mod, mod.Memory()
	return nil
}

// call runs a kernel export with stack as Extism's own wrapper does.
func (k *kernel) call(ctx context.Context, name string, stack []uint64) {
	if err := k.fns[name].CallWithStack(ctx, stack); err != nil {
		panic(fmt.Errorf("extism kernel %s: %w", name, err))
	}
}

// call1 runs a kernel export of at most one result and returns it.
func (k *kernel) call1(ctx context.Context, name string, args ...uint64) uint64 {
	var stack [2]uint64
	copy(stack[:], args)
	k.call(ctx, name, stack[:])
	return stack[0]
}

// reset empties the kernel, as Extism does before each call it makes.
func (k *kernel) reset(ctx context.Context) {
	k.call1(ctx, "reset")
	k.blocks.clear()
	k.dirty, k.answered = false, false
}

// hostBlock records a block the host allocated for the guest (a host
// function's result), which the guest may read, write and free.
func (k *kernel) hostBlock(off, n uint64) {
	k.dirty = true
	if off != 0 {
		k.blocks.add(off, n)
	}
}

// kernelFunctions are the host functions of kernelModule.
func (w *wasmPlugin) kernelFunctions() []extism.HostFunction {
	fns := make([]extism.HostFunction, 0, len(kernelExports))
	for name, sig := range kernelExports {
		f := extism.NewHostFunctionWithStack(name, w.kernelFunction(name), sig.params, sig.results)
		f.SetNamespace(kernelModule)
		fns = append(fns, f)
	}
	return fns
}

func (w *wasmPlugin) kernelFunction(name string) func(context.Context, *extism.CurrentPlugin, []uint64) {
	refuse := func(ctx context.Context, format string, args ...any) {
		bounds{}.refuse(ctx, abi.Errorf(abi.CodeABI, "%s.%s: "+format, append([]any{envModule, name}, args...)...))
	}
	kernelOf := func(ctx context.Context) *kernel {
		st, _ := ctx.Value(callStateKey{}).(*callState)
		if st == nil || st.inst == nil {
			panic(fmt.Errorf("%s.%s called outside an invocation", envModule, name))
		}
		k := &st.inst.kernel
		if err := k.bind(ctx); err != nil {
			panic(fmt.Errorf("%s.%s: %w", envModule, name, err))
		}
		return k
	}
	switch name {
	case "alloc":
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			n := stack[0]
			k.call(ctx, name, stack)
			k.dirty = true
			if stack[0] != 0 {
				k.blocks.add(stack[0], n)
			}
		}
	case "free":
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			if !k.blocks.remove(stack[0]) && !isInputBlock(ctx, stack[0]) {
				refuse(ctx, "%d is not a block the guest holds", stack[0])
			}
			k.call(ctx, name, stack)
		}
	case "store_u8", "store_u64":
		size := uint64(1)
		if name == "store_u64" {
			size = 8
		}
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			off := stack[0]
			if !k.blocks.holds(off, size) {
				refuse(ctx, "[%d, +%d) is outside every block the guest holds", off, size)
			}
			// A held block lies inside the kernel's memory, below 4 GiB.
			ok := false
			if size == 8 {
				ok = k.mem.WriteUint64Le(uint32(off), stack[1])
			} else {
				ok = k.mem.WriteByte(uint32(off), byte(stack[1]))
			}
			if !ok {
				refuse(ctx, "[%d, +%d) is outside the kernel's memory", off, size)
			}
		}
	case "load_u64":
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			off := stack[0]
			if off > 1<<32-8 {
				refuse(ctx, "%d is outside the kernel's memory", off)
			}
			v, ok := k.mem.ReadUint64Le(uint32(off))
			if !ok {
				refuse(ctx, "%d is outside the kernel's memory", off)
			}
			stack[0] = v
		}
	case "input_load_u64":
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			base, _ := ctx.Value(extism.InputOffsetKey("inputOffset")).(uint64)
			off := base + stack[0]
			if off < base || off > 1<<32-8 {
				refuse(ctx, "input offset %d is outside the kernel's memory", stack[0])
			}
			v, ok := k.mem.ReadUint64Le(uint32(off))
			if !ok {
				refuse(ctx, "input offset %d is outside the kernel's memory", stack[0])
			}
			stack[0] = v
		}
	case "reset":
		return func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
			kernelOf(ctx).reset(ctx)
		}
	case "output_set", "error_set":
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			k := kernelOf(ctx)
			k.call(ctx, name, stack)
			k.dirty, k.answered = true, true
		}
	default:
		return func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			kernelOf(ctx).call(ctx, name, stack)
		}
	}
}

// isInputBlock says whether off is the input block Extism allocated for
// the call underway, which a guest may free like its own.
func isInputBlock(ctx context.Context, off uint64) bool {
	in, ok := ctx.Value(extism.InputOffsetKey("inputOffset")).(uint64)
	return ok && in != 0 && in == off
}

// blockTable is a set of disjoint half-open ranges [start, end) of kernel
// memory, sorted by start.
type blockTable struct{ r []blockRange }

type blockRange struct{ start, end uint64 }

func (t *blockTable) clear() { t.r = t.r[:0] }

// add records [off, off+n). The kernel never hands out overlapping live
// blocks; a range that overlaps one recorded (which only a kernel
// corrupted some other way could produce) replaces it.
func (t *blockTable) add(off, n uint64) {
	end := off + n
	if end < off {
		end = ^uint64(0)
	}
	i, _ := slices.BinarySearchFunc(t.r, off, func(b blockRange, x uint64) int {
		switch {
		case b.start < x:
			return -1
		case b.start > x:
			return 1
		}
		return 0
	})
	j := i
	for i > 0 && t.r[i-1].end > off {
		i--
	}
	for j < len(t.r) && t.r[j].start < end {
		j++
	}
	t.r = slices.Replace(t.r, i, j, blockRange{off, end})
}

// remove forgets the block starting at off, reporting whether there was one.
func (t *blockTable) remove(off uint64) bool {
	i, found := t.find(off)
	if !found || t.r[i].start != off {
		return false
	}
	t.r = slices.Delete(t.r, i, i+1)
	return true
}

// holds says whether [off, off+n) lies inside one recorded block.
func (t *blockTable) holds(off, n uint64) bool {
	i, found := t.find(off)
	return found && off+n >= off && off+n <= t.r[i].end
}

// find returns the index of the block containing off.
func (t *blockTable) find(off uint64) (int, bool) {
	i, _ := slices.BinarySearchFunc(t.r, off, func(b blockRange, x uint64) int {
		if b.start <= x {
			return -1
		}
		return 1
	})
	// i is the first block starting after off.
	if i == 0 || off >= t.r[i-1].end {
		return 0, false
	}
	return i - 1, true
}
