package wazero

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/agentanvil/anvil/host/internal/wazero/internal/platform"
	"github.com/agentanvil/anvil/host/internal/wazero/internal/wasm"
)

// leanModule has a memory, three active data segments and no data count
// section (as a Go module has; the first two 13 bytes apart, the third 103
// bytes after the second), and an exported function load(addr) that
// returns the byte at addr.
func leanModule() []byte {
	section := func(id byte, content ...byte) []byte {
		return append([]byte{id, byte(len(content))}, content...) // every section here is < 128 bytes
	}
	b := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	b = append(b, section(1, 1, 0x60, 1, 0x7f, 1, 0x7f)...)           // type (i32) -> i32
	b = append(b, section(3, 1, 0)...)                                // function 0 has type 0
	b = append(b, section(5, 1, 1, 1, 1)...)                          // memory min 1 max 1
	b = append(b, section(7, 1, 4, 'l', 'o', 'a', 'd', 0, 0)...)      // export "load" func 0
	b = append(b, section(10, 1, 7, 0, 0x20, 0, 0x2d, 0, 0, 0x0b)...) // local.get 0; i32.load8_u; end
	b = append(b, section(11, 3,
		0, 0x41, 1, 0x0b, 2, 0xa, 0xb, // at 1: a b
		0, 0x41, 16, 0x0b, 1, 0xc, // at 16: c
		0, 0x41, 0xf8, 0x00, 0x0b, 3, 0xd, 0xe, 0xf)...) // at 120: d e f
	return b
}

// TestCompiledModuleIsLean: once compiled, a module keeps no function
// bodies, its data segments share one allocation, and its instances keep
// no per-segment data instances when no instruction can read them; what
// the guest sees is unchanged, in every engine.
func TestCompiledModuleIsLean(t *testing.T) {
	for _, cfg := range []struct {
		name string
		rc   RuntimeConfig
	}{
		{"compiler", NewRuntimeConfigCompiler()},
		{"interpreter", NewRuntimeConfigInterpreter()},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			if cfg.name == "compiler" && !platform.CompilerSupported() {
				t.Skip("no compiler on this platform")
			}
			ctx := context.Background()
			r := NewRuntimeWithConfig(ctx, cfg.rc)
			defer r.Close(ctx)
			bin := leanModule()
			compiled, err := r.CompileModule(ctx, bin)
			if err != nil {
				t.Fatal(err)
			}
			// The bodies were slices of bin while compiling; nothing the
			// caller does to bin afterwards reaches the compiled module.
			for i := range bin {
				bin[i] = 0xff
			}
			m := compiled.(*compiledModule).module
			for i := range m.CodeSection {
				if m.CodeSection[i].Body != nil || m.CodeSection[i].LocalTypes != nil {
					t.Errorf("function %d keeps its body or locals after compilation: %x %v", i, m.CodeSection[i].Body, m.CodeSection[i].LocalTypes)
				}
			}
			segs := m.DataSection // the first two joined, the third too far
			if len(segs) != 2 || !bytes.Equal(segs[0].Init, []byte{0xa, 0xb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc}) || !bytes.Equal(segs[1].Init, []byte{0xd, 0xe, 0xf}) {
				t.Fatalf("data segments after compilation: %+v", segs)
			}
			if cap(segs[0].Init) != len(segs[0].Init) {
				t.Errorf("segment 0 has capacity %d: an append would reach the next segment", cap(segs[0].Init))
			}
			if unsafe.Add(unsafe.Pointer(&segs[0].Init[0]), len(segs[0].Init)) != unsafe.Pointer(&segs[1].Init[0]) {
				t.Error("segments 0 and 1 are separate allocations, not one arena")
			}

			for n := 0; n < 2; n++ { // the module instantiates again without its bodies
				mod, err := r.InstantiateModule(ctx, compiled, NewModuleConfig().WithName(""))
				if err != nil {
					t.Fatal(err)
				}
				if di := mod.(*wasm.ModuleInstance).DataInstances; di != nil {
					t.Errorf("instance %d keeps %d data instances no instruction can read", n, len(di))
				}
				for addr, want := range map[uint64]uint64{0: 0, 1: 0xa, 2: 0xb, 3: 0, 16: 0xc, 17: 0, 120: 0xd, 122: 0xf} {
					res, err := mod.ExportedFunction("load").Call(ctx, addr)
					if err != nil {
						t.Fatal(err)
					}
					if res[0] != want {
						t.Errorf("instance %d: load(%d) = %#x, want %#x", n, addr, res[0], want)
					}
				}
				if err := mod.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
