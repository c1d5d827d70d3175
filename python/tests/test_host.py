"""Finding the anvil-host binary."""

import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import anvil
from anvil import _host


class HostBinaryTest(unittest.TestCase):
    def test_env_names_the_binary(self):
        with tempfile.NamedTemporaryFile() as f, mock.patch.dict(os.environ, {"ANVIL_HOST": f.name}):
            self.assertEqual(anvil.host_binary(), f.name)

    def test_env_naming_nothing_is_an_error(self):
        with mock.patch.dict(os.environ, {"ANVIL_HOST": "/no/such/anvil-host"}):
            with self.assertRaises(anvil.AnvilError) as cm:
                anvil.host_binary()
        self.assertIn("ANVIL_HOST=/no/such/anvil-host: no such file", str(cm.exception))

    def test_the_installed_script_first_then_path(self):
        with tempfile.TemporaryDirectory() as scripts, tempfile.TemporaryDirectory() as on_path:
            env = {k: v for k, v in os.environ.items() if k != "ANVIL_HOST"}
            env["PATH"] = on_path
            p = Path(on_path) / _host._EXE
            p.write_text("")
            p.chmod(0o755)
            with mock.patch.dict(os.environ, env, clear=True), mock.patch.object(_host, "_candidates", lambda: [Path(scripts)]):
                self.assertEqual(anvil.host_binary(), str(p))
                installed = Path(scripts) / _host._EXE
                installed.write_text("")
                self.assertEqual(anvil.host_binary(), str(installed))

    def test_none_is_an_error_saying_what_to_do(self):
        with tempfile.TemporaryDirectory() as empty:
            env = {k: v for k, v in os.environ.items() if k != "ANVIL_HOST"}
            env["PATH"] = empty
            with mock.patch.dict(os.environ, env, clear=True), mock.patch.object(_host, "_candidates", lambda: [Path(empty)]):
                with self.assertRaises(anvil.AnvilError) as cm:
                    anvil.host_binary()
        self.assertIn("no anvil-host binary", str(cm.exception))
        self.assertIn("reinstall anvil-eval for this platform, or set ANVIL_HOST", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
