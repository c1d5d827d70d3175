#!/usr/bin/env bash
# build.sh [OUT]: package the Python kwcov example (src/kwcov.py and the SDK
# in sdk/python) into one executable zipapp, OUT (default
# bin/process/kwcov-py.pyz at the repository root), and write OUT.sha256.
# The interpreter named in its shebang is $PYTHON (default /usr/bin/python3),
# which must have grpcio and protobuf (scripts/ci-deps-py installs them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/bin/process/kwcov-py.pyz}
py=${PYTHON:-/usr/bin/python3}
PYTHONPATH="$root/sdk/python/src" PYTHONDONTWRITEBYTECODE=1 "$py" -m anvil_sdk.pack "$here/src" \
	--plugin kwcov:plugin --python "$py" -o "$out" >/dev/null
echo "$out $(cat "$out.sha256")"
