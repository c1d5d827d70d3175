"""The quickstart's cases (examples/quickstart), as an application under
test would produce them: GOOD answers, and the same questions answered
badly (REGRESSED)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "anvil.yaml")
NOKEY = os.path.join(HERE, "nokey.yaml")

GOOD = [
    {"id": "capital-fr", "input": "What is the capital of France?", "actual_output": "The capital of France is Paris.",
     "expected_output": "Paris"},
    {"id": "capital-au", "input": "What is the capital of Australia?",
     "actual_output": "Canberra is the capital of Australia.", "expected_output": "Canberra"},
    {"id": "boiling-point", "input": "At what temperature does water boil at sea level, in Celsius?",
     "actual_output": "Water boils at 100 °C at sea level.", "expected_output": "100 °C"},
]

REGRESSED = [
    {"id": "capital-au", "input": "What is the capital of Australia?",
     "actual_output": "Sydney is the capital of Australia.", "expected_output": "Canberra"},
    {"id": "largest-planet", "input": "Which planet is the largest in the solar system?",
     "actual_output": "Saturn is the largest planet.", "expected_output": "Jupiter"},
]
