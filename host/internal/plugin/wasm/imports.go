package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentanvil/anvil/abi"
)

// The import modules the host provides to a guest. Anything else a module
// imports cannot be linked, and wazero would say only "module[env] not
// instantiated"; checkImports names the import instead, before compiling.
const (
	wasiModule = "wasi_snapshot_preview1"
	// abortModule and abortName are AssemblyScript's default abort
	// (env.abort(message, file, line, column)), provided so an
	// AssemblyScript guest built with default options links; it traps with
	// the guest's message (see abortListener).
	abortModule = "env"
	abortName   = "abort"
)

// providedImports says, per import module the host provides, which
// function names it has (nil: any, left to the runtime to check).
var providedImports = map[string]map[string]bool{
	envModule:         nil, // the Extism kernel
	abi.HostNamespace: {abi.HostJudge: true, abi.HostEmbed: true, abi.HostLog: true},
	wasiModule:        nil, // wazero implements all of preview 1
	abortModule:       {abortName: true},
}

// providedText is what the host provides, for error messages.
const providedText = "Anvil provides " + envModule + " (the Extism kernel), " + abi.HostNamespace + " (" + abi.HostJudge + ", " +
	abi.HostEmbed + ", " + abi.HostLog + "), " + wasiModule + " and " + abortModule + "." + abortName + " (AssemblyScript's abort)"

type wasmImport struct {
	module, name string
	kind         byte // 0 function, 1 table, 2 memory, 3 global, 4 tag
}

// checkImports refuses a module importing something the host does not
// provide, naming every such import.
func checkImports(wasm []byte) error {
	imports, err := moduleImports(wasm)
	if err != nil {
		return err
	}
	var missing []string
	for _, im := range imports {
		names, ok := providedImports[im.module]
		switch {
		case !ok:
		case im.kind != 0:
		case names == nil || names[im.name]:
			continue
		}
		what := [...]string{"function", "table", "memory", "global", "tag"}[min(int(im.kind), 4)]
		missing = append(missing, fmt.Sprintf("module %q %s %q", im.module, what, im.name))
	}
	if len(missing) == 0 {
		return nil
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	if len(missing) > 8 {
		missing = append(missing[:8], fmt.Sprintf("and %d more", len(missing)-8))
	}
	return fmt.Errorf("the module imports %s, which %s not provided by the host: %s", strings.Join(missing, ", "), verb, providedText)
}

// moduleImports lists the imports of a module checkModuleShape accepted.
func moduleImports(wasm []byte) ([]wasmImport, error) {
	r := wasmReader{b: wasm, off: 8}
	for !r.done() {
		id, body, err := r.section()
		if err != nil {
			return nil, err
		}
		if id != 2 {
			continue
		}
		s := wasmReader{b: body}
		n, err := s.u32()
		if err != nil {
			return nil, err
		}
		out := make([]wasmImport, 0, min(int(n), 1024))
		for i := uint32(0); i < n; i++ {
			var names [2]string
			for j := range names {
				l, err := s.u32()
				if err != nil {
					return nil, fmt.Errorf("import %d: %w", i, err)
				}
				b, err := s.bytes(int(l))
				if err != nil {
					return nil, fmt.Errorf("import %d: %w", i, err)
				}
				names[j] = string(b)
			}
			kind, err := s.byte()
			if err != nil {
				return nil, fmt.Errorf("import %d: %w", i, err)
			}
			switch kind {
			case 0:
				_, err = s.u32()
			case 1:
				_, err = tableType(&s)
			case 2:
				_, _, err = limitsType(&s)
			case 3:
				if err = valType(&s); err == nil {
					_, err = s.byte()
				}
			case 4:
				if _, err = s.byte(); err == nil {
					_, err = s.u32()
				}
			default:
				err = fmt.Errorf("unknown import kind %d", kind)
			}
			if err != nil {
				return nil, fmt.Errorf("import %d: %w", i, err)
			}
			out = append(out, wasmImport{module: names[0], name: names[1], kind: kind})
		}
		return out, nil
	}
	return nil, nil
}

// abortFunction is env.abort. Its body never runs: abortListener, which
// can read the guest's memory (an Extism host function cannot), refuses
// the call first with the guest's message. The body is the fallback.
func abortFunction() extism.HostFunction {
	i32 := extism.ValueTypeI32
	f := extism.NewHostFunctionWithStack(abortName, func(context.Context, *extism.CurrentPlugin, []uint64) {
		panic(errors.New("env.abort called"))
	}, []extism.ValueType{i32, i32, i32, i32}, nil)
	f.SetNamespace(abortModule)
	return f
}

// abortListener turns AssemblyScript's abort(message, fileName, line,
// column) into a trap carrying its message and location.
type abortListener struct {
	bounds
	listener
}

func (l abortListener) Before(ctx context.Context, guest api.Module, _ api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	var msg, file string
	if guest != nil && guest.Memory() != nil && len(params) == 4 {
		msg = asString(guest.Memory(), uint32(params[0]))
		file = asString(guest.Memory(), uint32(params[1]))
	}
	if msg == "" {
		msg = "(no message)"
	}
	where := ""
	if file != "" {
		where = fmt.Sprintf(" at %s:%d:%d", file, uint32(params[2]), uint32(params[3]))
	}
	l.refuse(ctx, abi.Errorf(abi.CodeTrap, "guest aborted (%s.%s): %s%s", abortModule, abortName, msg, where))
}

// maxAbortChars bounds what is read of an abort message or file name.
const maxAbortChars = 1024

// asString reads an AssemblyScript string: UTF-16LE code units at ptr,
// whose byte length is the u32 at ptr-4 (the object header's rtSize).
// Anything out of bounds or implausible reads as "".
func asString(mem api.Memory, ptr uint32) string {
	if ptr < 4 || ptr%2 != 0 {
		return ""
	}
	n, ok := mem.ReadUint32Le(ptr - 4)
	if !ok || n%2 != 0 {
		return ""
	}
	clipped := n > 2*maxAbortChars
	n = min(n, 2*maxAbortChars)
	b, ok := mem.Read(ptr, n)
	if !ok {
		return ""
	}
	units := make([]uint16, n/2)
	for i := range units {
		units[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	s := string(utf16.Decode(units))
	if clipped {
		s += "…"
	}
	return s
}
