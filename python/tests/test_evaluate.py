"""anvil.evaluate and anvil.assert_passes against the real anvil-host and a
fake judge server (python/anvil_test.go starts both and sets the
environment: ANVIL_HOST, ANVIL_TEST_JUDGE_URL, ANVIL_TEST_KEY)."""

import json
import os
import shutil
import tempfile
import unittest

import anvil

URL = os.environ.get("ANVIL_TEST_JUDGE_URL", "")

GOOD = {"id": "fr", "input": "Capital of France?", "actual_output": "Paris.", "expected_output": "Paris"}
BAD = {"id": "au", "input": "Capital of Australia?", "actual_output": "Sydney.", "expected_output": "Canberra"}
AU_FAILURE = ('case "au", metric correctness: failed (score 0.200, threshold 0.60): '
              "Sydney is not the capital; Canberra is.")


def write_config(directory, key_env="ANVIL_TEST_KEY", url=URL):
    path = os.path.join(directory, "anvil.yaml")
    with open(path, "w") as f:
        f.write("""version: 1
judges:
  default: {base_url: "%s", model: judge-model, api_key_env: %s, supports_logprobs: true, supports_json_schema: true}
defaults: {store: store.db}
metrics:
  - name: correctness
    kind: geval
    threshold: 0.6
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
""" % (url, key_env))
    return path


@unittest.skipUnless(URL, "needs the fake judge server: go test ./python")
class EvaluateTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="anvil-py-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.config = write_config(self.dir)

    def test_passing_cases(self):
        other = dict(GOOD, id="de", input="Capital of Germany?", actual_output="Berlin.", expected_output="Berlin")
        res = anvil.evaluate(self.config, [other, GOOD], cache="off")
        self.assertTrue(res.passed)
        self.assertEqual((res.verdict, res.exit_code), ("passed", 0))
        self.assertEqual([c.id for c in res.cases], ["de", "fr"], "results in the order the cases were given")
        m = res.case("fr").metric("correctness")
        self.assertEqual((m.status, m.score, m.threshold, m.gated), ("passed", 0.9, 0.6, True))
        self.assertEqual(m.reason, "Agrees with the expected output.")
        self.assertEqual(m.details["raw_score"], 9)
        self.assertEqual(res.case("fr").case, GOOD)
        self.assertEqual(res.failures(), [])
        self.assertEqual(res.summary["cases"], 2)
        self.assertIsNone(res.output_dir, "a temporary output directory is not handed out")
        self.assertIs(anvil.assert_passes(self.config, [GOOD], cache="off").passed, True)

    def test_failing_case(self):
        res = anvil.evaluate(self.config, [GOOD, BAD], cache="off")
        self.assertFalse(res.passed)
        self.assertEqual((res.verdict, res.exit_code), ("failed", 1))
        m = res.case("au").metric("correctness")
        self.assertEqual((m.status, m.score), ("failed", 0.2))
        self.assertEqual([str(f) for f in res.failures()], [AU_FAILURE])
        f = res.failures()[0]
        self.assertEqual((f.case_id, f.metric, f.status, f.score, f.threshold), ("au", "correctness", "failed", 0.2, 0.6))

    def test_assert_passes_names_each_failure(self):
        with self.assertRaises(AssertionError) as cm:
            anvil.assert_passes(self.config, [GOOD, BAD], cache="off")
        self.assertEqual(str(cm.exception), "anvil: " + AU_FAILURE)

    def test_nothing_verified_fails(self):
        # No key for a remote judge (a judge on loopback needs none): the
        # G-Eval metric skips every case. A green test would lie.
        config = write_config(self.dir, key_env="ANVIL_TEST_NO_SUCH_KEY", url="https://judge.invalid/v1")
        env = {k: v for k, v in os.environ.items() if k != "ANVIL_TEST_NO_SUCH_KEY"}
        res = anvil.evaluate(config, [GOOD], env=env)
        self.assertEqual((res.verdict, res.exit_code, res.passed), ("unverified", 3, False))
        self.assertEqual(res.failures(), [], "a skip is not a failure")
        self.assertEqual(res.case("fr").metric("correctness").status, "skipped")
        with self.assertRaises(AssertionError) as cm:
            anvil.assert_passes(config, [GOOD], env=env)
        msg = str(cm.exception)
        self.assertTrue(msg.startswith("anvil: could not verify: metric correctness: "), msg)
        self.assertIn("ANVIL_TEST_NO_SUCH_KEY", msg)

    def test_output_dir_is_kept(self):
        out = os.path.join(self.dir, "out")
        res = anvil.evaluate(self.config, [GOOD, BAD], output_dir=out, cache="off")
        self.assertEqual(res.output_dir, out)
        for name in ("summary.json", "results.jsonl", "junit.xml", "report.html"):
            self.assertTrue(os.path.isfile(os.path.join(out, name)), name)
        again = anvil.read_results(out)
        self.assertEqual((again.verdict, [str(f) for f in again.failures()]), ("failed", [AU_FAILURE]))

    def test_bad_config_is_an_error_naming_the_line(self):
        bad = write_config(self.dir).replace("anvil.yaml", "bad.yaml")
        with open(self.config) as src, open(bad, "w") as dst:
            dst.write(src.read().replace("threshold: 0.6", "treshold: 0.6"))
        with self.assertRaises(anvil.AnvilError) as cm:
            anvil.evaluate(bad, [GOOD])
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn("bad.yaml:8", str(cm.exception))
        self.assertIn('did you mean "threshold"?', str(cm.exception))

    def test_bad_cases(self):
        for cases, want in (
            ([GOOD, GOOD], "duplicate case id"),
            ([dict(GOOD, input=3)], 'field "input"'),
            ([GOOD, "not a case"], "case 1: want a dict"),
            ([dict(GOOD, score=float("nan"))], "case 0 (id 'fr')"),
            (GOOD, "want an iterable of dicts"),
        ):
            with self.assertRaises(anvil.AnvilError, msg=want) as cm:
                anvil.evaluate(self.config, cases)
            self.assertIn(want, str(cm.exception))

    def test_no_such_config(self):
        with self.assertRaises(anvil.AnvilError) as cm:
            anvil.evaluate(os.path.join(self.dir, "missing.yaml"), [GOOD])
        self.assertIn("missing.yaml: no such file", str(cm.exception))


class FailureTest(unittest.TestCase):
    def test_words(self):
        # The same words as host.Failure.String() in Go.
        self.assertEqual(str(anvil.Failure("q1", "faith", "error", None, 0.5, "judge_unavailable: down")),
                         'case "q1", metric faith: error (no score, threshold 0.50): judge_unavailable: down')
        self.assertEqual(str(anvil.Failure('say "hi"', "m", "failed", 0.12345, 0.7, "low")),
                         'case "say \\"hi\\"", metric m: failed (score 0.123, threshold 0.70): low')

    def test_error_reason(self):
        m = anvil.MetricResult("m", "k", "error", True, None, 0.5, "", {"code": "plugin_trap", "message": "boom",
                               "plugin": "tc", "digest": "sha256:" + "ab" * 32}, {}, {})
        self.assertEqual(m.why(), "plugin tc@sha256:abababababab: plugin_trap: boom")


if __name__ == "__main__":
    unittest.main()
