"""Anvil from Python: LLM-as-a-judge evaluation run by the anvil-host binary
installed with this package.

    import anvil

    result = anvil.evaluate("anvil.yaml", [
        {"id": "capital-au", "input": "What is the capital of Australia?",
         "actual_output": "Canberra.", "expected_output": "Canberra"},
    ])
    result.passed                                  # the gate's verdict
    result.case("capital-au").metric("correctness").score

    anvil.assert_passes("anvil.yaml", cases)       # in a test: fails with each
                                                   # failing case's metric, score,
                                                   # threshold and reason

In pytest, the `anvil` fixture does the same with the config named by
@pytest.mark.anvil(config=...), --anvil-config or the anvil_config ini
option, and keeps each test's report under its tmp_path.
"""

from ._errors import AnvilError
from ._evaluate import CaseResult, Failure, MetricResult, Result, assert_passes, evaluate, read_results, write_cases
from ._host import host_binary

__all__ = [
    "AnvilError",
    "CaseResult",
    "Failure",
    "MetricResult",
    "Result",
    "assert_passes",
    "evaluate",
    "host_binary",
    "read_results",
    "write_cases",
]
