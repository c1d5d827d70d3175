#!/bin/sh
# build.sh: build plugin.wasm from plugin.c and write plugin.wasm.sha256
# ("sha256:<hex>", the digest anvil.yaml pins). Needs clang, lld, wasi-libc
# and the wasm32 compiler-rt builtins (Debian: apt-get install clang lld
# wasi-libc libclang-rt-dev-wasm32). Set CC to use another clang.
#
# -mexec-model=reactor: a library-style module with _initialize (which
# Extism calls once per instance) and no _start/main. The exports are
# marked in the source with ANVIL_EXPORT, so no --export flags are needed.
set -eu
cd "$(dirname "$0")"
${CC:-clang} --target=wasm32-wasi -mexec-model=reactor -O2 -std=c11 -Wall -Wextra \
	-Wl,--strip-all -I . -o plugin.wasm plugin.c
echo "sha256:$(sha256sum plugin.wasm | cut -d' ' -f1)" >plugin.wasm.sha256
echo "built plugin.wasm $(cat plugin.wasm.sha256)"
