package frontend

import (
	"github.com/agentanvil/anvil/host/internal/wazero/internal/engine/wazevo/ssa"
	"github.com/agentanvil/anvil/host/internal/wazero/internal/wasm"
)

func FunctionIndexToFuncRef(idx wasm.Index) ssa.FuncRef {
	return ssa.FuncRef(idx)
}
