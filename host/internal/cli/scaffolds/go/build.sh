#!/usr/bin/env bash
# build.sh: build plugin.wasm from source and write plugin.wasm.sha256
# ("sha256:<hex>", the digest anvil.yaml pins). -trimpath makes the digest
# independent of where this directory is. Needs only the Go toolchain.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
go mod tidy
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -o plugin.wasm .
echo "sha256:$(sha256sum plugin.wasm | cut -d' ' -f1)" >plugin.wasm.sha256
echo "built plugin.wasm $(cat plugin.wasm.sha256)"
