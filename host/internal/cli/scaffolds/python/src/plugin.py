"""{{.Name}}: the {{.Kind}} metric kind, an Anvil process plugin in Python.

score = the fraction of the configured keywords found in actual_output,
ASCII case-insensitive unless case_sensitive. Deterministic: it asks the
host for no capability, so it runs without a judge.
"""

from anvil_sdk import Plugin

plugin = Plugin("{{.Name}}", "0.1.0")

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "case_sensitive": {"type": "boolean", "default": False},
    },
    "required": ["keywords"],
    "additionalProperties": False,
}

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def ascii_lower(s):
    """A-Z to a-z and nothing else."""
    return s.translate(_ASCII_LOWER)


@plugin.metric("{{.Kind}}", required_fields=["actual_output"], config_schema=CONFIG_SCHEMA,
               description="fraction of the configured keywords found in the actual output")
def measure(ctx, host, config, request):
    # config is validated against CONFIG_SCHEMA, defaults filled in;
    # request is the ABI's MeasureRequest (request["case"] is the test case).
    output = request["case"]["actual_output"]
    fold = (lambda s: s) if config["case_sensitive"] else ascii_lower
    found = [k for k in config["keywords"] if fold(k) in fold(output)]
    missing = [k for k in config["keywords"] if fold(k) not in fold(output)]
    score = len(found) / len(config["keywords"])
    reason = "found %d of %d keywords" % (len(found), len(config["keywords"]))
    if missing:
        reason += "; missing: " + ", ".join(missing)
    host.log("debug", "scored", case_id=request["case"].get("id"), score=score)
    return {"score": score, "reason": reason, "details": {"found": found, "missing": missing}}
