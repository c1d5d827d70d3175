"""Package a Python process plugin into one executable file: a zipapp with
the plugin's sources and this SDK inside, behind a shebang naming the
interpreter by absolute path (the host starts plugins with no PATH).

    python3 -m anvil_sdk.pack SRC_DIR --plugin MODULE:ATTR -o bin/NAME.pyz

writes bin/NAME.pyz (mode 0755) and bin/NAME.pyz.sha256 ("sha256:<hex>",
for sha256_file in anvil.yaml). The archive is reproducible: the same
sources and SDK give the same bytes, so the same digest. Its dependencies
(grpcio, protobuf) are the interpreter's: they have native code and cannot
run from a zip. They must be installed where the sandboxed plugin can read
them: under a root host the plugin runs as nobody, who cannot read /root
(so not a pyenv or venv under /root).
"""

import argparse
import hashlib
import io
import os
import subprocess
import sys
import zipfile

_EPOCH = (1980, 1, 1, 0, 0, 0)
_MAIN = """\
import sys
sys.dont_write_bytecode = True
from anvil_sdk import serve
from {module} import {attr} as plugin
serve(plugin)
"""


def _sources(root, prefix):
    """(archive name, path) of every .py under root, sorted; no caches."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(d, f)
                out.append((prefix + os.path.relpath(p, root).replace(os.sep, "/"), p))
    return out


def build(src, plugin, out, python):
    module, _, attr = plugin.partition(":")
    if not module or not attr:
        raise SystemExit("--plugin: want MODULE:ATTR, got %r" % plugin)
    if not os.path.isabs(python):
        raise SystemExit("--python: want an absolute path (the host starts plugins with no PATH), got %r" % python)
    sdk_dir = os.path.dirname(os.path.abspath(__file__))
    files = _sources(src, "") + _sources(sdk_dir, "anvil_sdk/")
    names = [n for n, _ in files]
    if "__main__.py" in names:
        raise SystemExit("%s has a __main__.py: the archive's entry point is generated" % src)
    if len(set(names)) != len(names):
        raise SystemExit("%s has its own anvil_sdk package" % src)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        entries = [("__main__.py", _MAIN.format(module=module, attr=attr).encode())]
        entries += [(n, open(p, "rb").read()) for n, p in files]
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(name, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    # -I: ignore the environment and the user's site-packages; -B: write
    # no bytecode (the sandbox's filesystem is read-only).
    blob = ("#!%s -IB\n" % python).encode() + buf.getvalue()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    with open(out + ".sha256", "w") as f:
        f.write(digest + "\n")
    return digest


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m anvil_sdk.pack", description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="directory of the plugin's Python sources")
    ap.add_argument("--plugin", required=True, help="MODULE:ATTR of the anvil_sdk.Plugin to serve")
    ap.add_argument("-o", "--out", required=True, help="the executable to write")
    ap.add_argument("--python", default=sys.executable,
                    help="absolute path of the interpreter in the shebang (default: this one, %(default)s)")
    a = ap.parse_args(argv)
    check = subprocess.run([a.python, "-I", "-c", "import grpc, google.protobuf"], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit("%s cannot import grpc and protobuf (pip install grpcio protobuf, or scripts/ci-deps-py):\n%s"
                         % (a.python, check.stderr.strip()))
    print(build(a.src, a.plugin, a.out, a.python))


if __name__ == "__main__":
    main()
