#!/usr/bin/env bash
# build.sh: build {{.Name}} from source into build/{{.Name}}.wasm and write
# its digest, "sha256:<hex>", to build/{{.Name}}.wasm.sha256 (anvil.yaml pins
# the plugin by that file). Needs node >= 18 and npm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in node npm; do
	command -v "$tool" >/dev/null || { echo "build.sh: $tool not found: install node >= 18 and npm (Debian: apt-get install nodejs npm)" >&2; exit 1; }
done

# The SDK is installed from an Anvil checkout. When this project was made
# without knowing where that is, ANVIL_DIR says.
if grep -q '"file:ANVIL_DIR/' package.json; then
	if [[ -z ${ANVIL_DIR:-} ]]; then
		echo "build.sh: set ANVIL_DIR to your Anvil checkout (it has sdk/assemblyscript)" >&2
		exit 1
	fi
	sed -i "s#\"file:ANVIL_DIR/#\"file:${ANVIL_DIR%/}/#" package.json
fi

# install-links copies the SDK into node_modules (with its dependency,
# @extism/as-pdk) instead of symlinking it.
if [[ ! -x node_modules/.bin/asc || package.json -nt node_modules/.anvil-installed ]]; then
	npm install --install-links --no-audit --no-fund --loglevel=error >/dev/null
	touch node_modules/.anvil-installed
fi

npx --no-install asc assembly/index.ts --config asconfig.json --target release
echo "sha256:$(sha256sum build/{{.Name}}.wasm | cut -d' ' -f1)" >build/{{.Name}}.wasm.sha256
echo "built build/{{.Name}}.wasm ($(wc -c <build/{{.Name}}.wasm) bytes), $(cat build/{{.Name}}.wasm.sha256)"
