"""keyword_coverage: the Anvil example metric (examples/kwcov), in Python.

score = found / len(keywords); a keyword is found when it is a substring of
actual_output (ASCII-only lowering of both unless case_sensitive, so every
language agrees). With judge_check, one judge request asks whether the
keywords are used meaningfully; a "false" verdict halves the score.
"""

from anvil_sdk import Plugin

plugin = Plugin("kwcov-py", "0.1.0", capabilities=["judge"])

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                     "description": "keywords to look for, in order; duplicates count separately"},
        "case_sensitive": {"type": "boolean", "default": False},
        "judge_check": {"type": "boolean", "default": False,
                        "description": "ask the judge whether the keywords are used meaningfully"},
    },
    "required": ["keywords"],
    "additionalProperties": False,
}

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "boolean"}},
    "required": ["verdict"],
    "additionalProperties": False,
}

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def ascii_lower(s):
    """A-Z to a-z and nothing else (str.lower would also fold non-ASCII)."""
    return s.translate(_ASCII_LOWER)


def judge_prompt(keywords, output):
    return ("Does the following answer use these keywords in a meaningful way? Keywords: "
            + ", ".join(keywords) + "\n\nAnswer:\n" + output
            + "\n\nReturn only a JSON object {\"verdict\": true|false}.")


@plugin.metric("keyword_coverage", required_fields=["actual_output"], config_schema=CONFIG_SCHEMA,
               description="fraction of the configured keywords found in the actual output")
def keyword_coverage(ctx, host, config, request):
    keywords = config["keywords"]
    output = request["case"]["actual_output"]
    hay = output if config["case_sensitive"] else ascii_lower(output)
    found, missing = [], []
    for k in keywords:
        needle = k if config["case_sensitive"] else ascii_lower(k)
        (found if needle in hay else missing).append(k)
    score = len(found) / len(keywords)
    reason = "found %d of %d keywords" % (len(found), len(keywords))
    if missing:
        reason += "; missing: " + ", ".join(missing)
    details = {"found": found, "missing": missing}
    if config["judge_check"]:
        [resp] = host.judge([{
            "messages": [{"role": "user", "content": judge_prompt(keywords, output)}],
            "schema": VERDICT_SCHEMA,
            "schema_name": "keyword_check",
            "purpose": "keyword_check",
            "temperature": 0,
        }])
        if resp.get("error"):
            return {"error": resp["error"]}
        verdict = (resp.get("json") or {}).get("verdict")
        if not isinstance(verdict, bool):
            return {"error": {"code": "judge_error", "message": "judge verdict is not a boolean: %r" % (resp.get("content"),)}}
        details["judge"] = verdict
        if not verdict:
            score /= 2
            reason += "; judge: not meaningful"
    threshold = request.get("threshold") or 0
    return {"score": score, "success": score >= threshold, "reason": reason, "details": details}
