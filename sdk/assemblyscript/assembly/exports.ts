// The ABI v1 exports (abi/v1/README.md §2). Re-export the ones your plugin
// needs from its entry file:
//
//   export { anvil_abi_v1, anvil_describe, anvil_measure } from "@agentanvil/anvil-sdk/assembly/exports";
//
// (add anvil_prepare for kinds with prepare: true, anvil_node for node kinds).

import { serveDescribe, serveMeasure, serveNode, servePrepare } from "./plugin";

/** The ABI marker: its presence says the module speaks ABI major 1. Never called. */
export function anvil_abi_v1(): void {}

export function anvil_describe(): i32 {
  return serveDescribe();
}

export function anvil_measure(): i32 {
  return serveMeasure();
}

export function anvil_prepare(): i32 {
  return servePrepare();
}

export function anvil_node(): i32 {
  return serveNode();
}
