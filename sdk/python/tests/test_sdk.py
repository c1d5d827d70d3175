import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "kwcov", "py", "src"))

from anvil_sdk import AnvilError, Plugin, has, last_turn, validate_config  # noqa: E402
from anvil_sdk._serve import Host, _remaining, decode_conn_info, embed_vectors  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "case_sensitive": {"type": "boolean", "default": False},
        "n": {"type": "integer", "minimum": 1},
    },
    "required": ["keywords"],
    "additionalProperties": False,
}


class FakeHost:
    def __init__(self, responses=None, error=None):
        self.batches = []
        self.responses = responses or []
        self.error = error
        self.logs = []

    def judge(self, requests):
        self.batches.append(requests)
        if self.error:
            raise self.error
        return self.responses

    def log(self, level, message, **attrs):
        self.logs.append((level, message, attrs))


def req(config, output="Paris is the capital of France.", threshold=0.5, kind="keyword_coverage"):
    return {"kind": kind, "metric": "kw", "config": config, "threshold": threshold,
            "case": {"id": "c1", "actual_output": output}}


class ValidateConfig(unittest.TestCase):
    def err(self, config):
        with self.assertRaises(AnvilError) as cm:
            validate_config(SCHEMA, config)
        self.assertEqual(cm.exception.code, "invalid_config")
        return cm.exception

    def test_defaults_filled(self):
        self.assertEqual(validate_config(SCHEMA, {"keywords": ["a"]}), {"keywords": ["a"], "case_sensitive": False})

    def test_unknown_field_named(self):
        e = self.err({"keywords": ["a"], "bogus": 1})
        self.assertEqual(e.field, "bogus")
        self.assertIn('"bogus"', e.message)

    def test_keywords(self):
        for cfg in ({}, None, {"keywords": []}, {"keywords": [""]}, {"keywords": "a"}, {"keywords": [1]},
                    {"keywords": None}):
            self.assertEqual(self.err(cfg).field, "keywords", cfg)

    def test_types(self):
        self.assertEqual(self.err({"keywords": ["a"], "case_sensitive": "yes"}).field, "case_sensitive")
        self.assertEqual(self.err({"keywords": ["a"], "n": 1.5}).field, "n")
        self.assertEqual(self.err({"keywords": ["a"], "n": 0}).field, "n")
        self.assertEqual(self.err({"keywords": ["a"], "n": True}).field, "n")
        self.assertEqual(validate_config(SCHEMA, {"keywords": ["a"], "n": 2})["n"], 2)

    def test_not_an_object(self):
        self.assertEqual(self.err([1]).code, "invalid_config")

    def test_no_schema_takes_no_config(self):
        self.assertEqual(validate_config(None, None), {})
        with self.assertRaises(AnvilError):
            validate_config(None, {"x": 1})

    def test_unsupported_schema_keyword_refused(self):
        p = Plugin("p", "0.1.0")
        with self.assertRaises(ValueError):
            p.add_metric("k", lambda *a: None, config_schema={"type": "object", "patternProperties": {}})


class Results(unittest.TestCase):
    def plugin(self, fn, **kw):
        p = Plugin("p", "1.2.3", capabilities=["judge"])
        p.add_metric("k", fn, required_fields=["actual_output"], **kw)
        return p

    def test_describe(self):
        p = self.plugin(lambda *a: {"score": 1}, config_schema={"type": "object"}, description="d")
        self.assertEqual(p.describe(), {
            "name": "p", "version": "1.2.3", "abi_major": 1, "abi_minor": 5, "capabilities": ["judge"],
            "kinds": [{"name": "k", "role": "metric", "description": "d", "required_fields": ["actual_output"],
                       "config_schema": {"type": "object"}}]})

    def test_success_is_score_vs_threshold(self):
        p = self.plugin(lambda ctx, host, cfg, r: {"score": 0.5, "reason": "r", "details": {"a": []}})
        self.assertEqual(p.measure(None, None, req(None, kind="k", threshold=0.5)),
                         {"threshold": 0.5, "score": 0.5, "success": True, "reason": "r", "details": {"a": []}})
        self.assertFalse(p.measure(None, None, req(None, kind="k", threshold=0.6))["success"])

    def test_missing_field(self):
        p = self.plugin(lambda *a: {"score": 1})
        r = req(None, kind="k")
        r["case"]["actual_output"] = ""
        self.assertEqual(p.measure(None, None, r)["error"],
                         {"code": "missing_field", "message": 'case "c1" has no actual_output', "field": "actual_output"})

    def test_errors(self):
        def raises(ctx, host, cfg, r):
            raise AnvilError("judge_error", "down", retryable=True)
        self.assertEqual(self.plugin(raises).measure(None, None, req(None, kind="k")),
                         {"success": False, "threshold": 0.5,
                          "error": {"code": "judge_error", "message": "down", "retryable": True}})

        def bug(ctx, host, cfg, r):
            return 1 / 0
        e = self.plugin(bug).measure(None, None, req(None, kind="k"))["error"]
        self.assertEqual(e["code"], "metric_error")
        self.assertIn("ZeroDivisionError", e["message"])
        for bad in (1.5, -0.1, float("nan"), None, True, "1"):
            e = self.plugin(lambda *a, s=bad: {"score": s}).measure(None, None, req(None, kind="k"))["error"]
            self.assertEqual(e["code"], "metric_error", bad)

    def test_unknown_kind(self):
        p = self.plugin(lambda *a: {"score": 1})
        self.assertEqual(p.measure(None, None, req(None, kind="nope"))["error"]["code"], "abi_violation")
        self.assertEqual(p.node(None, None, {"kind": "k"})["error"]["code"], "abi_violation")

    def test_results_are_json(self):
        p = self.plugin(lambda *a: {"score": 1, "details": {"é": "☕"}})
        json.dumps(p.measure(None, None, req(None, kind="k")), allow_nan=False)


class KeywordCoverage(unittest.TestCase):
    """The example metric through the SDK, with a fake host: the parts the
    host tests (examples/kwcov/py) cannot reach, because the host checks
    configs and required fields before the plugin sees them."""

    def setUp(self):
        import kwcov
        self.p = kwcov.plugin

    def test_config_errors(self):
        for cfg, field in (({"keywords": ["a"], "bogus": 1}, "bogus"), ({"keywords": []}, "keywords"),
                           ({}, "keywords"), ({"keywords": ["a", ""]}, "keywords"),
                           ({"keywords": ["a"], "judge_check": 1}, "judge_check")):
            e = self.p.measure(None, FakeHost(), req(cfg))["error"]
            self.assertEqual((e["code"], e.get("field")), ("invalid_config", field), cfg)

    def test_judge_batch_error_propagates(self):
        for code in ("capability_denied", "budget_exhausted", "judge_error"):
            host = FakeHost(error=AnvilError(code, "no"))
            res = self.p.measure(None, host, req({"keywords": ["Paris"], "judge_check": True}))
            self.assertEqual(res["error"]["code"], code)
            self.assertNotIn("score", res)

    def test_judge_response_error_propagates(self):
        host = FakeHost(responses=[{"error": {"code": "judge_truncated", "message": "cut"}}])
        res = self.p.measure(None, host, req({"keywords": ["Paris"], "judge_check": True}))
        self.assertEqual(res["error"], {"code": "judge_truncated", "message": "cut"})

    def test_judge_request(self):
        host = FakeHost(responses=[{"content": "{\"verdict\":false}", "json": {"verdict": False}}])
        res = self.p.measure(None, host, req({"keywords": ["Paris", "Rome"], "judge_check": True}, "Paris!"))
        self.assertEqual(res["score"], 0.25)
        self.assertEqual(res["reason"], "found 1 of 2 keywords; missing: Rome; judge: not meaningful")
        self.assertEqual(res["details"], {"found": ["Paris"], "missing": ["Rome"], "judge": False})
        [[r]] = host.batches
        self.assertEqual(r["schema_name"], "keyword_check")
        self.assertEqual(r["purpose"], "keyword_check")
        self.assertEqual(r["temperature"], 0)
        self.assertEqual(r["messages"][0]["content"],
                         "Does the following answer use these keywords in a meaningful way? Keywords: Paris, Rome"
                         "\n\nAnswer:\nParis!\n\nReturn only a JSON object {\"verdict\": true|false}.")


CONVERSATION = {"id": "conv", "turns": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": "", "tools_called": [{"name": "lookup"}]},
]}


class Turns(unittest.TestCase):
    def test_last_turn(self):
        for role, want in (("user", "Hi"), ("assistant", "Hello."), ("system", "Be brief."), ("tool", None)):
            self.assertEqual(last_turn(CONVERSATION, role), want, role)
        self.assertIsNone(last_turn({"id": "single", "input": "q"}, "user"))

    def test_required_turns_and_derived_fields(self):
        p = Plugin("p", "0.1.0")
        p.add_metric("k", lambda ctx, host, cfg, r: {"score": 1},
                     required_fields=["turns", "last_user_turn", "last_assistant_turn"])
        self.assertEqual(p.measure(None, None, {"kind": "k", "case": CONVERSATION}), {"threshold": 0, "score": 1.0, "success": True})
        for case, field in (({"id": "s", "input": "q"}, "turns"),
                            ({"id": "u", "turns": [{"role": "assistant", "content": "a"}]}, "last_user_turn"),
                            ({"id": "a", "turns": [{"role": "user", "content": "q"}]}, "last_assistant_turn")):
            e = p.measure(None, None, {"kind": "k", "case": case})["error"]
            self.assertEqual((e["code"], e["field"]), ("missing_field", field), case)


# The presence table the host and every SDK are held to (abi/v1/README.md section 8).
PRESENCE = os.path.join(HERE, "..", "..", "..", "abi", "v1", "testdata", "presence.json")


class Presence(unittest.TestCase):
    def test_table(self):
        """context and retrieval_context as the host has them: a list of only
        white-space strings is absent, white space being Go's unicode.IsSpace
        (not str.isspace: U+001C-U+001F are text). A kind requiring the field
        answers missing_field exactly when has() is false."""
        with open(PRESENCE, encoding="utf-8") as f:
            rows = json.load(f)["rows"]
        self.assertGreater(len(rows), 40)
        p = Plugin("p", "0.1.0")
        for field in ("context", "retrieval_context"):
            p.add_metric(field, lambda ctx, host, cfg, r: {"score": 1}, required_fields=[field])
        for row in rows:
            for field, other in (("context", "retrieval_context"), ("retrieval_context", "context")):
                with self.subTest(row=row["name"], field=field):
                    case = {"id": "c", field: row["items"]}
                    self.assertEqual(has(case, field), row["present"])
                    self.assertFalse(has(case, other))
                    err = p.measure(None, None, {"kind": field, "case": case}).get("error")
                    self.assertEqual(err is None, row["present"], err)
                    if err is not None:
                        self.assertEqual((err["code"], err["field"]), ("missing_field", field))

    def test_only_strings_count_in_context(self):
        self.assertFalse(has({"context": [None, 1, {"a": "b"}, ["x"], " \u3000"]}, "context"))
        self.assertTrue(has({"context": [None, "\u001c"]}, "context"))

    def test_standard_fields_never_read_extra(self):
        case = {"id": "c", "extra": {"input": "x", "context": ["a"], "tools_called": [{"name": "t"}], "turns": [1]}}
        for field in ("input", "context", "tools_called", "turns"):
            self.assertFalse(has(case, field), field)

    def test_extra_values(self):
        """An extra key is present unless null or "": [] and {} are values (the host renders them as JSON)."""
        case = {"id": "c", "input": " ", "extra": {"list": [], "obj": {}, "no": False, "zero": 0, "blank": " ",
                                                   "empty": "", "none": None}}
        for field, want in (("list", True), ("obj", True), ("no", True), ("zero", True), ("blank", True),
                            ("empty", False), ("none", False), ("absent", False), ("input", True)):
            self.assertEqual(has(case, field), want, field)
        self.assertFalse(has({"id": "c"}, "list"))


class Embed(unittest.TestCase):
    def test_vectors(self):
        self.assertEqual(embed_vectors({"vectors": [[1, 0.5], [-2, 3]], "usage": {}}, 2), [[1.0, 0.5], [-2.0, 3.0]])

    def test_host_error_keeps_its_code(self):
        for code in ("capability_denied", "budget_exhausted", "invalid_config", "judge_error"):
            with self.assertRaises(AnvilError) as cm:
                embed_vectors({"vectors": [], "error": {"code": code, "message": "no", "field": "embedding_model"}}, 1)
            self.assertEqual(cm.exception.code, code)

    def test_malformed_results_are_abi_violations(self):
        for res, n in (([], 1), ({"vectors": [[1]]}, 2), ({}, 1), ({"vectors": [[1, 2], [1]]}, 2),
                       ({"vectors": [[]]}, 1), ({"vectors": [[1, "2"]]}, 1), ({"vectors": [[True]]}, 1),
                       ({"vectors": [[float("inf")]]}, 1), ({"vectors": [5]}, 1), ({"error": "x"}, 1)):
            with self.assertRaises(AnvilError) as cm:
                embed_vectors(res, n)
            self.assertEqual(cm.exception.code, "abi_violation", res)

    def serve_host(self, servicer):
        """A loopback gRPC server with servicer as anvil.v1.Host (None: no
        Host service at all, as on a host older than ABI minor 5 for Embed),
        and a Host client of it."""
        from concurrent import futures

        import grpc
        from anvil_sdk._proto import plugin_pb2_grpc
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        if servicer is not None:
            plugin_pb2_grpc.add_HostServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        channel = grpc.insecure_channel("127.0.0.1:%d" % port)
        self.addCleanup(channel.close)
        return Host(channel, "tok")

    def test_over_grpc(self):
        from google.protobuf import wrappers_pb2
        from anvil_sdk._proto import plugin_pb2_grpc
        seen = []

        class Servicer(plugin_pb2_grpc.HostServicer):
            def Embed(self, request, context):
                seen.append((json.loads(request.value), dict(context.invocation_metadata())["anvil-invocation"]))
                return wrappers_pb2.BytesValue(value=json.dumps(
                    {"vectors": [[0.5, 1], [2, -1]], "usage": {"calls": 1}}).encode())

        h = self.serve_host(Servicer())
        self.assertEqual(h.embed(["é", "b"], judge="j", purpose="similarity"), [[0.5, 1.0], [2.0, -1.0]])
        self.assertEqual(seen, [({"texts": ["é", "b"], "judge": "j", "purpose": "similarity"}, "tok")])

    def test_host_without_embed_is_capability_denied(self):
        with self.assertRaises(AnvilError) as cm:
            self.serve_host(None).embed(["a"])
        self.assertEqual(cm.exception.code, "capability_denied")
        self.assertIn("older than ABI minor 5", cm.exception.message)

    def test_request_bounds_checked_before_sending(self):
        h = Host(None, "tok")  # no callback service: any call that got through would fail differently
        for texts in ([], ["a"] * 2049, ["a", 1]):
            with self.assertRaises(AnvilError) as cm:
                h.embed(texts)
            self.assertEqual(cm.exception.code, "abi_violation")
            self.assertIn("embed:", cm.exception.message)


class TimeRemaining(unittest.TestCase):
    """A host call without a deadline (grpcio: about 1e19 seconds left) gives
    callbacks no timeout; passing it on made gRPC refuse every callback."""

    class Ctx:
        def __init__(self, left):
            self.left = left

        def time_remaining(self):
            return self.left

    def test_no_deadline(self):
        self.assertIsNone(_remaining(self.Ctx(9.2e18)))
        self.assertIsNone(_remaining(self.Ctx(None)))
        self.assertIsNone(_remaining(None))

    def test_deadline(self):
        self.assertEqual(_remaining(self.Ctx(90000.0)), 90000.0)
        self.assertEqual(_remaining(self.Ctx(0.5)), 0.5)


class Wire(unittest.TestCase):
    def test_conn_info(self):
        # plugin.ConnInfo{service_id: 300, network: "unix", address: "/s/p", knock: {knock: true}}
        raw = b"\x08\xac\x02\x12\x04unix\x1a\x04/s/p\x22\x02\x08\x01"
        self.assertEqual(decode_conn_info(raw),
                         {"service_id": 300, "network": "unix", "address": "/s/p", "knock": {1: 1}})


if __name__ == "__main__":
    unittest.main()
