"""The pytest plugin (the anvil-eval wheel registers it with pytest).

    @pytest.mark.anvil(config="anvil.yaml")
    def test_support_answers(anvil_eval):
        anvil_eval.assert_passes([
            {"id": "refund-digital", "input": "...", "actual_output": my_app("..."), "expected_output": "..."},
        ])

The fixture anvil_eval evaluates with the config the test's anvil marker
names (relative to the test's file), else --anvil-config (relative to the
directory pytest runs in), else the anvil_config ini option (relative to
the rootdir). Each evaluation keeps its outputs — summary.json,
results.jsonl, junit.xml, report.html — under the test's tmp_path, and a
failing test names the report. The marker's other keyword arguments are
evaluate's (cache, concurrency, env, timeout).

anvil.assert_passes works without the fixture, in any test runner.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Mapping, Optional

import pytest

from ._evaluate import Result, evaluate


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("anvil", "Anvil LLM-as-a-judge evaluation")
    group.addoption("--anvil-config", default=None, metavar="PATH",
                    help="anvil.yaml for the anvil_eval fixture in tests without @pytest.mark.anvil(config=...)")
    parser.addini("anvil_config", "anvil.yaml for the anvil_eval fixture, relative to the rootdir", default="")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "anvil(config=PATH, **options): the anvil.yaml (relative to the test file) and evaluate options "
        "(cache, concurrency, env, timeout) the anvil_eval fixture uses",
    )


class AnvilEval:
    """evaluate and assert_passes, bound to one test's config and output."""

    def __init__(self, config: str, output_root: str, options: Mapping[str, Any]):
        self.config = config
        self._root = output_root
        self._options = dict(options)
        self._runs = 0

    def _output_dir(self) -> str:
        self._runs += 1
        return os.path.join(self._root, "anvil-%d" % self._runs)

    def evaluate(self, cases: Iterable[Mapping[str, Any]], **options: Any) -> Result:
        """anvil.evaluate with this test's config; the outputs are kept."""
        opts = dict(self._options, **options)
        opts.setdefault("output_dir", self._output_dir())
        return evaluate(self.config, cases, **opts)

    def assert_passes(self, cases: Iterable[Mapping[str, Any]], **options: Any) -> Result:
        """anvil.assert_passes with this test's config; a failure names the report."""
        __tracebackhide__ = True
        result = self.evaluate(cases, **options)
        if result.passed:
            return result
        lines = ["anvil: " + line for line in result.problems()]
        if result.output_dir:
            lines.append("anvil: report: " + os.path.join(result.output_dir, "report.html"))
        raise AssertionError("\n".join(lines))


@pytest.fixture
def anvil_eval(request: Any, tmp_path: Any) -> AnvilEval:
    """Evaluates cases with the test's anvil.yaml (see the module's doc)."""
    marker = request.node.get_closest_marker("anvil")
    options: Dict[str, Any] = {}
    config: Optional[str] = None
    if marker is not None:
        options = dict(marker.kwargs)
        config = options.pop("config", None)
        if config is None and marker.args:
            config = marker.args[0]
        if config is not None and not os.path.isabs(config):
            config = os.path.join(os.path.dirname(str(request.node.path)), config)
    if config is None:
        config = request.config.getoption("anvil_config")
    if config is None:
        ini = request.config.getini("anvil_config")
        if ini:
            config = ini if os.path.isabs(ini) else os.path.join(str(request.config.rootpath), ini)
    if not config:
        pytest.fail("anvil_eval: no config: mark the test @pytest.mark.anvil(config=\"anvil.yaml\"), "
                    "or pass --anvil-config, or set anvil_config in the pytest ini", pytrace=False)
    return AnvilEval(os.fspath(config), str(tmp_path), options)
