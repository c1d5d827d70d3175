#!/usr/bin/env bash
# build.sh: package src/ and the Anvil Python SDK into one executable
# zipapp, bin/{{.Name}}.pyz, and write bin/{{.Name}}.pyz.sha256 (the digest
# anvil.yaml pins). The same sources give the same bytes, so the same digest.
#
#   PYTHON    interpreter named (by absolute path) in the shebang; it needs
#             grpcio and protobuf, readable by the user the plugin runs as
#             (default: the active virtual environment's python3, where
#             `pip install anvil-plugin-sdk` put the SDK and its
#             dependencies; without one, /usr/bin/python3)
#   ANVIL_SDK directory holding the anvil_sdk package, when it is not
#             installed for $PYTHON (pip install anvil-plugin-sdk)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ -n "${PYTHON:-}" ]; then
	py=$PYTHON
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python3" ]; then
	py=$VIRTUAL_ENV/bin/python3
else
	py=/usr/bin/python3
fi
case $py in
/*) ;;
*)
	echo "build.sh: PYTHON=$py: want an absolute path (the host starts plugins with no PATH)" >&2
	exit 1
	;;
esac
sdk=${ANVIL_SDK:-{{if .AnvilDir}}{{.AnvilDir}}/sdk/python/src{{end}}}
# Exit 3 is "no anvil_sdk at all": the advice is to install it or point
# ANVIL_SDK at it. Anything else (the SDK found, but grpc missing, say) is
# said as the import error itself: that advice would be wrong then.
rc=0
why=$(PYTHONPATH="$sdk" "$py" -B -c '
import sys
try:
    import anvil_sdk
except ModuleNotFoundError as e:
    if e.name == "anvil_sdk":
        sys.exit(3)
    hint = " (the plugin needs grpcio and protobuf: " + sys.executable + " -m pip install grpcio protobuf)" if (e.name or "").split(".")[0] in ("grpc", "google") else ""
    print(type(e).__name__ + ": " + str(e) + hint)
    sys.exit(4)
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
    sys.exit(4)
' 2>&1) || rc=$?
case $rc in
0) ;;
3)
	echo "build.sh: $py cannot import anvil_sdk: $py -m pip install anvil-plugin-sdk (installed in a virtual environment? activate it, or set PYTHON to its python3), or set ANVIL_SDK to the anvil repository's sdk/python/src" >&2
	exit 1
	;;
*)
	echo "build.sh: $py cannot import anvil_sdk${sdk:+ from $sdk}: $why" >&2
	exit 1
	;;
esac
PYTHONPATH="$sdk" PYTHONDONTWRITEBYTECODE=1 "$py" -B -m anvil_sdk.pack src --plugin plugin:plugin --python "$py" -o bin/{{.Name}}.pyz
