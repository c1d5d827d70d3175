// @agentanvil/anvil-sdk: write Anvil ABI v1 plugins in AssemblyScript.
// See ../README.md.

export * from "./json";
export * from "./abi";
export { judge, embed, log, setError, anvilAbort, outputString, inputString } from "./host";
export {
  register,
  registerPrepare,
  registerNode,
  checkConfigFields,
  DescribeFn,
  MeasureFn,
  PrepareFn,
  NodeFn,
} from "./plugin";
export * from "./text";
