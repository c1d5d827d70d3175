"""Must pass: scripts/install-e2e runs it with the wheels installed in a
fresh virtual environment, offline."""

import os
import subprocess
import sys
import sysconfig

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import anvil  # noqa: E402
from cases import CONFIG, GOOD, REGRESSED  # noqa: E402


def test_the_wheel_put_anvil_host_beside_python():
    binary = anvil.host_binary()
    assert binary == os.path.join(sysconfig.get_path("scripts"), "anvil-host")
    out = subprocess.run([binary, "version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("anvil-host %s\n" % os.environ["ANVIL_E2E_VERSION"]), out


def test_good_answers_pass():
    result = anvil.assert_passes(CONFIG, GOOD)
    assert result.passed and result.verdict == "passed"
    assert [c.id for c in result.cases] == ["capital-fr", "capital-au", "boiling-point"]
    m = result.case("capital-au").metric("correctness")
    assert (m.status, m.score, m.threshold, m.reason) == ("passed", 0.79, 0.6, "Correct and direct.")
    assert result.summary["judges"][0]["source"] == "recording"


def test_evaluate_returns_the_regressions_without_raising():
    result = anvil.evaluate(CONFIG, REGRESSED)
    assert not result.passed and result.exit_code == 1
    assert [str(f) for f in result.failures() if f.metric == "correctness"] == [
        'case "capital-au", metric correctness: failed (score 0.210, threshold 0.60): Wrong or evasive.',
        'case "largest-planet", metric correctness: failed (score 0.210, threshold 0.60): Wrong or evasive.',
    ]


@pytest.mark.anvil(config="../anvil.yaml")
def test_fixture_keeps_the_report(anvil_eval):
    result = anvil_eval.assert_passes(GOOD[:1])
    assert os.path.isfile(os.path.join(result.output_dir, "report.html"))
    assert os.path.isfile(os.path.join(result.output_dir, "junit.xml"))
