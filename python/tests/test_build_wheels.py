"""scripts/build-wheels: Go module versions to PEP 440."""

import importlib.machinery
import importlib.util
import os
import unittest

_path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "build-wheels")
_loader = importlib.machinery.SourceFileLoader("build_wheels", _path)
_spec = importlib.util.spec_from_loader("build_wheels", _loader)
bw = importlib.util.module_from_spec(_spec)
_loader.exec_module(bw)


class PEP440Test(unittest.TestCase):
    def test_versions(self):
        for go, py in (
            ("v1.2.3", "1.2.3"),
            ("v0.1.0", "0.1.0"),
            ("v1.2.3-rc.1", "1.2.3rc1"),
            ("v1.2.3-beta.2", "1.2.3b2"),
            ("v1.2.3-alpha.1", "1.2.3a1"),
            ("v1.0.0+incompatible", "1.0.0"),
            # Pseudo-versions: a development build after the version they follow.
            ("v0.0.0-20260102030405-0123456789ab", "0.0.0.dev20260102030405+g0123456789ab"),
            ("v1.2.4-0.20260102030405-0123456789ab", "1.2.4.dev20260102030405+g0123456789ab"),
            ("v1.2.3-rc.1.0.20260102030405-0123456789ab", "1.2.3rc1.dev20260102030405+g0123456789ab"),
        ):
            self.assertEqual(bw.pep440(go), py, go)

    def test_refused(self):
        for go in ("1.2.3", "v1.2", "v1.2.3-e2e.1", "latest"):
            with self.assertRaises(SystemExit, msg=go):
                bw.pep440(go)

    def test_every_target_has_a_platform_tag(self):
        for goos in ("linux", "darwin", "windows"):
            for goarch in ("amd64", "arm64"):
                self.assertIn(goos + "/" + goarch, bw.PLATFORMS)


if __name__ == "__main__":
    unittest.main()
