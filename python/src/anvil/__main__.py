"""python -m anvil ARGS: runs the installed anvil-host with ARGS."""

import os
import subprocess
import sys

from ._errors import AnvilError
from ._host import host_binary


def main() -> int:
    try:
        binary = host_binary()
    except AnvilError as e:
        print("anvil: %s" % e, file=sys.stderr)
        return 2
    if sys.platform == "win32":
        return subprocess.run([binary] + sys.argv[1:], check=False).returncode
    os.execv(binary, [binary] + sys.argv[1:])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
