"""Hatchling hooks: the wheel's version, and the anvil-host binary it carries.

scripts/build-wheels sets, per wheel:

    ANVIL_WHEEL_VERSION   the PEP 440 version (from the Go module version)
    ANVIL_HOST_BINARY     the anvil-host (or anvil-host.exe) built for the platform
    ANVIL_WHEEL_PLATFORM  the wheel's platform tag, e.g. manylinux_2_17_x86_64.manylinux2014_x86_64
    ANVIL_HOST_SBOM       optional: a CycloneDX SBOM of the binary, put in .dist-info/sboms

A wheel without a binary would install an `anvil` that cannot run, so
building one without ANVIL_HOST_BINARY and ANVIL_WHEEL_PLATFORM is an
error rather than a pure-Python wheel.
"""

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

# Without a stamp (an install from a checkout): a development version that
# sorts before every release.
_UNSTAMPED = "0.0.0.dev0"


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        metadata["version"] = os.environ.get("ANVIL_WHEEL_VERSION") or _UNSTAMPED


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        if version == "editable":
            raise RuntimeError("anvil-eval: no editable install: the package runs a binary built per platform (scripts/build-wheels)")
        binary = os.environ.get("ANVIL_HOST_BINARY", "")
        platform = os.environ.get("ANVIL_WHEEL_PLATFORM", "")
        if not binary or not platform:
            raise RuntimeError(
                "anvil-eval: set ANVIL_HOST_BINARY (the anvil-host for the platform) and ANVIL_WHEEL_PLATFORM "
                "(its wheel platform tag); scripts/build-wheels does both"
            )
        if not os.path.isfile(binary):
            raise RuntimeError("anvil-eval: ANVIL_HOST_BINARY=%s: no such file" % binary)
        windows = platform.startswith("win")
        if windows != binary.endswith(".exe"):
            raise RuntimeError("anvil-eval: platform %s with binary %s: a Windows wheel carries anvil-host.exe, others anvil-host" % (platform, binary))
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-" + platform
        build_data["shared_scripts"][binary] = "anvil-host.exe" if windows else "anvil-host"
        sbom = os.environ.get("ANVIL_HOST_SBOM", "")
        if sbom:
            build_data["sbom_files"].append(sbom)
