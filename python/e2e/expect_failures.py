"""Checks the failing suite's JUnit XML: every test failed (none passed,
errored or skipped), each with the lines it must show.

    python expect_failures.py junit.xml
"""

import sys
import xml.etree.ElementTree as ET

# Per test: lines its failure must contain, in order, and nothing about a
# case that passed.
EXPECT = {
    "test_regressed_answers": [
        'anvil: case "capital-au", metric correctness: failed (score 0.210, threshold 0.60): Wrong or evasive.',
        'anvil: case "capital-au", metric helpfulness: failed (score 0.210, threshold 0.50): Wrong or evasive.',
    ],
    "test_regression_through_the_fixture": [
        'anvil: case "largest-planet", metric correctness: failed (score 0.210, threshold 0.60): Wrong or evasive.',
        "anvil: report: ",
    ],
    "test_nothing_verified": [
        "anvil: could not verify: metric correctness: ",
    ],
}
MUST_MENTION = {"test_nothing_verified": "ANVIL_E2E_NO_SUCH_KEY"}
MUST_NOT_MENTION = {"test_regressed_answers": "capital-fr"}


def main(path):
    root = ET.parse(path).getroot()
    problems = []
    seen = set()
    for tc in root.iter("testcase"):
        name = tc.get("name")
        seen.add(name)
        failure = tc.find("failure")
        if failure is None:
            problems.append("%s: did not fail (%s)" % (name, ", ".join(c.tag for c in tc) or "passed"))
            continue
        text = (failure.get("message") or "") + "\n" + (failure.text or "")
        pos = 0
        for line in EXPECT.get(name, []):
            i = text.find(line, pos)
            if i < 0:
                problems.append("%s: its failure lacks %r (in order)" % (name, line))
            else:
                pos = i + len(line)
        if name in MUST_MENTION and MUST_MENTION[name] not in text:
            problems.append("%s: its failure does not name %s" % (name, MUST_MENTION[name]))
        if name in MUST_NOT_MENTION and ("case \"%s\"" % MUST_NOT_MENTION[name]) in text:
            problems.append("%s: its failure names the passing case %s" % (name, MUST_NOT_MENTION[name]))
        if name not in EXPECT:
            problems.append("%s: a failing test this check does not know" % name)
    for name in EXPECT:
        if name not in seen:
            problems.append("%s: did not run" % name)
    if problems:
        print("expect_failures: " + "\nexpect_failures: ".join(problems), file=sys.stderr)
        return 1
    print("expect_failures: %d tests failed, each with the right messages" % len(EXPECT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
