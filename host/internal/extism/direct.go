package extism

import (
	"context"
	"fmt"

	"github.com/agentanvil/anvil/host/internal/wazero/api"
)

// Anvil patch (PATCHES.md, 4): what the host needs to hand a guest its
// input, and take its output, in the guest's own linear memory rather than
// through Extism's kernel. Extism's PDKs copy the input out of the
// kernel's memory one host call per 8 bytes (input_load_u64) and write the
// output back the same way (store_u64): ≈ 150 host calls for a 1.2 KB
// request, each leaving the guest's compiled code for Go. A guest that
// offers a buffer of its own lets the host copy the whole request in one
// memmove. The protocol (which export, which control block) is Anvil's and
// lives in host/internal/plugin; this file only gives it access.

// GuestMemory is the main module's linear memory (nil when it has none).
// It is the guest's own memory, not the kernel's (Memory).
func (p *Plugin) GuestMemory() api.Memory {
	return p.mainModule.Memory()
}

// GuestFunction returns the definition of the main module's export name,
// or nil when the module has no such function export.
func (p *Plugin) GuestFunction(name string) api.FunctionDefinition {
	f := p.fns.main(p.mainModule, name)
	if f == nil {
		return nil
	}
	return f.Definition()
}

// CallRaw calls the main module's export name with params and returns its
// results, as CallWithContext does but without touching Extism's input,
// output or error: the guest's runtime is initialised first if it has not
// been, and host functions see the same context values an Extism call
// gives them. The caller checks the export's signature (GuestFunction).
func (p *Plugin) CallRaw(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	if p.mainModule.IsClosed() {
		return nil, fmt.Errorf("module is closed")
	}
	f := p.fns.main(p.mainModule, name)
	if f == nil {
		return nil, fmt.Errorf("unknown function: %s", name)
	}
	ctx = context.WithValue(ctx, PluginCtxKey("extism"), p.extism)
	ctx = context.WithValue(ctx, PluginCtxKey("plugin"), p)
	if p.guestRuntime.init != nil && !p.guestRuntime.initialized {
		if err := p.guestRuntime.init(ctx); err != nil {
			return nil, fmt.Errorf("failed to initialize runtime: %v", err)
		}
		p.guestRuntime.initialized = true
	}
	return f.Call(ctx, params...)
}

// Closed reports whether the main module was closed (the guest exited, or
// a deadline stopped it): its linear memory may be gone, and must not be
// touched.
func (p *Plugin) Closed() bool { return p.mainModule.IsClosed() }

// CallDirect is CallWithContext(ctx, name, nil) for a guest that takes its
// request and leaves its answer in its own memory: the same results and
// errors, without the kernel calls that would change nothing. Extism's
// kernel is reset and given the empty input (3 kernel calls) only when
// something used the kernel since it last was, and its error and output
// are read (4 calls) only when something used it during the call; a
// guest that never touches the kernel — a direct-I/O measure — makes
// neither (PATCHES.md, 5).
func (p *Plugin) CallDirect(ctx context.Context, name string) (uint32, []byte, error) {
	return p.call(ctx, name, nil, true)
}
