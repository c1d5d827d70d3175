package abi

import "embed"

// Files holds the ABI's published artefacts for tools that check a plugin
// against them without a checkout of this repository (`anvil-host plugin
// test`): the JSON Schemas, "v1/schema/<message>.json", and the golden
// vectors, "testdata/<message>[.<variant>].json".
//
//go:embed v1/schema/*.json testdata/*.json
var Files embed.FS
