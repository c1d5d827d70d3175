"""Must fail, every test, with the messages expect_failures.py checks:
scripts/install-e2e runs it with the wheels installed in a fresh virtual
environment, offline."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import anvil  # noqa: E402
from cases import CONFIG, GOOD, NOKEY, REGRESSED  # noqa: E402


def test_regressed_answers():
    anvil.assert_passes(CONFIG, [GOOD[0], REGRESSED[0]])


@pytest.mark.anvil(config="../anvil.yaml")
def test_regression_through_the_fixture(anvil_eval):
    anvil_eval.assert_passes(REGRESSED[1:])


def test_nothing_verified():
    anvil.assert_passes(NOKEY, GOOD[:1])
