// The package entry: asc resolves "@agentanvil/anvil-sdk" to this file.
export * from "./assembly/index";
