// Package host evaluates test cases with LLM-as-a-judge metrics from Go:
// the embedding API of Anvil. Load a config (the anvil.yaml the CLI reads),
// then Evaluate cases or Run the config's dataset; the result is the same
// summary and per-case results `anvil-host run` writes. For `go test`, see
// the anviltest package.
//
// Everything else — judge clients, logprob weighting, the plugin runtime
// (Wasm and process transports), the DAG scheduler, the store — is internal
// to this module and may change; abi and sdk are the plugin contract, and
// host/judgetest is a fake OpenAI-compatible judge server for tests.
package host
