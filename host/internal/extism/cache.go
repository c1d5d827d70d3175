package extism

import "github.com/agentanvil/anvil/host/internal/wazero/api"

// functionCache holds the api.Function of each export a Plugin has called,
// so that a call does not build a new one. wazero's ExportedFunction
// returns a fresh call engine with its own 10 KiB stack every time, and
// upstream go-sdk asks for one on every kernel call — a Go guest writes its
// output 8 bytes at a time through store_u64, so one small result cost
// about twenty of them (≈ 200 KiB of garbage per call).
//
// A Plugin is used by one goroutine at a time, and kernel functions never
// re-enter themselves, so one cached function per name is safe to reuse:
// wazero documents an api.Function as reusable, not concurrently.
type functionCache struct {
	kernelFns map[string]api.Function
	mainFns   map[string]api.Function
	// kernelUsed is set whenever a kernel function is looked up to be
	// called, by the host or for the guest (Anvil patch 5: CallDirect
	// skips resetting a kernel nothing used since its last reset).
	kernelUsed bool
}

// kernel returns the kernel module's export name (nil when absent).
func (c *functionCache) kernel(m api.Module, name string) api.Function {
	c.kernelUsed = true
	return c.lookup(&c.kernelFns, m, name)
}

// main returns the main module's export name (nil when absent).
func (c *functionCache) main(m api.Module, name string) api.Function {
	return c.lookup(&c.mainFns, m, name)
}

func (c *functionCache) lookup(fns *map[string]api.Function, m api.Module, name string) api.Function {
	if f, ok := (*fns)[name]; ok {
		return f
	}
	f := m.ExportedFunction(name)
	if f == nil {
		return nil
	}
	if *fns == nil {
		*fns = map[string]api.Function{}
	}
	(*fns)[name] = f
	return f
}
