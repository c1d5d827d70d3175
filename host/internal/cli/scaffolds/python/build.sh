#!/usr/bin/env bash
# build.sh: package src/ and the Anvil Python SDK into one executable
# zipapp, bin/{{.Name}}.pyz, and write bin/{{.Name}}.pyz.sha256 (the digest
# anvil.yaml pins). The same sources give the same bytes, so the same digest.
#
#   PYTHON    interpreter named (by absolute path) in the shebang; it needs
#             grpcio and protobuf, readable by the user the plugin runs as
#             (default /usr/bin/python3)
#   ANVIL_SDK directory holding the anvil_sdk package, when it is not
#             installed for $PYTHON (pip install anvil-plugin-sdk)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
py=${PYTHON:-/usr/bin/python3}
sdk=${ANVIL_SDK:-{{if .AnvilDir}}{{.AnvilDir}}/sdk/python/src{{end}}}
if ! PYTHONPATH="$sdk" "$py" -B -c 'import anvil_sdk' 2>/dev/null; then
	echo "build.sh: $py cannot import anvil_sdk: pip install anvil-plugin-sdk, or set ANVIL_SDK to the anvil repository's sdk/python/src" >&2
	exit 1
fi
PYTHONPATH="$sdk" PYTHONDONTWRITEBYTECODE=1 "$py" -B -m anvil_sdk.pack src --plugin plugin:plugin --python "$py" -o bin/{{.Name}}.pyz
