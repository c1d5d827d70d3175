#!/usr/bin/env bash
# build.sh: build the kwcov-as example plugin from source.
#
#   examples/kwcov/as/build.sh             # → bin/wasm/kwcov-as.wasm (+ .sha256)
#   OUT=/tmp/wasm examples/kwcov/as/build.sh
#
# Installs the locked npm dependencies (npm ci, only when package-lock.json
# changed since the last install), compiles assembly/index.ts with asc and
# writes the module's digest, "sha256:<hex>", next to it. Needs node and npm
# (scripts/ci-deps-as installs them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${OUT:-$root/bin/wasm}
cd "$here"
# One build at a time in this directory: go test runs the parity test
# (examples/kwcov) and this example's own tests (examples/kwcov/as) in
# parallel, and two `npm ci` in one node_modules fail with ENOTEMPTY.
exec 9<"$here"
flock 9

# The SDK is installed from the repository (a file: dependency, copied by
# install-links), so reinstall when it or the lock file changed.
stamp=node_modules/.anvil-install-stamp
want=$(cat package-lock.json ../../../sdk/assemblyscript/package.json ../../../sdk/assemblyscript/index.ts \
	../../../sdk/assemblyscript/asconfig.json ../../../sdk/assemblyscript/assembly/*.ts | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
	npm ci --no-audit --no-fund --loglevel=error >/dev/null
	echo "$want" >"$stamp"
fi

mkdir -p "$out"
npx --no-install asc assembly/index.ts --config asconfig.json --target release --outFile "$out/kwcov-as.wasm"
sum="sha256:$(sha256sum "$out/kwcov-as.wasm" | cut -d' ' -f1)"
if [[ ! -f "$out/kwcov-as.wasm.sha256" || "$(cat "$out/kwcov-as.wasm.sha256")" != "$sum" ]]; then
	echo "$sum" >"$out/kwcov-as.wasm.sha256"
fi
printf '%-22s %s\n' kwcov-as.wasm "$sum"
