#!/bin/sh
# Builds the C example metric from source: bin/wasm/kwcov-c.wasm and
# bin/wasm/kwcov-c.wasm.sha256 ("sha256:<hex>") under the repository root,
# or under $1 when given. Needs clang, lld, wasi-libc and
# libclang-rt-dev-wasm32 (scripts/ci-deps-c installs them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/bin/wasm}
mkdir -p "$out"
${CC:-clang} --target=wasm32-wasi -mexec-model=reactor -O2 -std=c11 \
	-Wall -Wextra -Werror -Wl,--strip-all \
	-I "$root/sdk/c" -o "$out/kwcov-c.wasm" "$here/src/kwcov.c"
printf 'sha256:%s\n' "$(sha256sum "$out/kwcov-c.wasm" | cut -d' ' -f1)" > "$out/kwcov-c.wasm.sha256"
