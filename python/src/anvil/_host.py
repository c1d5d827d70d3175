"""Finding and running the anvil-host binary this package drives."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import List, Optional

from ._errors import AnvilError

_EXE = "anvil-host.exe" if sys.platform == "win32" else "anvil-host"


def _candidates() -> List[Path]:
    """Where an installer puts the wheel's scripts, in the order tried."""
    out = []
    # The environment this interpreter runs in (a venv's bin/, Scripts\ on Windows).
    out.append(Path(sysconfig.get_path("scripts")))
    # pip install --user.
    try:
        user_scheme = sysconfig.get_preferred_scheme("user")  # Python 3.10+
    except AttributeError:
        user_scheme = "nt_user" if os.name == "nt" else "posix_user"
    try:
        out.append(Path(sysconfig.get_path("scripts", scheme=user_scheme)))
    except KeyError:
        pass
    # pip install --target DIR: DIR/anvil/_host.py, the script in DIR/bin.
    out.append(Path(__file__).resolve().parent.parent / "bin")
    return out


def host_binary() -> str:
    """The anvil-host this package runs.

    $ANVIL_HOST when set (a binary built from source, say); else the one
    installed with this package; else one on PATH. Raises AnvilError when
    there is none.
    """
    env = os.environ.get("ANVIL_HOST")
    if env:
        if not os.path.isfile(env):
            raise AnvilError("ANVIL_HOST=%s: no such file" % env)
        return env
    for d in _candidates():
        p = d / _EXE
        if p.is_file():
            return str(p)
    found = shutil.which(_EXE)
    if found:
        return found
    raise AnvilError(
        "no anvil-host binary: not beside this Python (%s) nor on PATH; reinstall anvil-eval for this platform, "
        "or set ANVIL_HOST to a binary (go install github.com/agentanvil/anvil/cmd/anvil-host@latest)"
        % sysconfig.get_path("scripts")
    )


def host_command(args: List[str], binary: Optional[str] = None) -> List[str]:
    return [binary or host_binary()] + list(args)
