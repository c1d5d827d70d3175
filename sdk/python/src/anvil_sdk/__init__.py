"""Anvil plugin SDK for Python: serve metric kinds written as plain Python
functions as an Anvil process plugin (transport: process).

    from anvil_sdk import Plugin, AnvilError, serve

    plugin = Plugin("mymetric", "0.1.0")

    @plugin.metric("my_kind", required_fields=["actual_output"], config_schema={
        "type": "object", "additionalProperties": False,
        "properties": {"word": {"type": "string", "minLength": 1}}, "required": ["word"]})
    def measure(ctx, host, config, request):
        out = request["case"]["actual_output"]
        found = config["word"] in out
        return {"score": 1.0 if found else 0.0, "reason": "found" if found else "missing"}

    if __name__ == "__main__":
        serve(plugin)

Package it with `python3 -m anvil_sdk.pack` into one executable zipapp,
the file whose sha256 the host pins.
"""

from ._plugin import (ABI_MAJOR, ABI_MINOR, ABI_VIOLATION, BUDGET_EXHAUSTED, CAPABILITY_DENIED, INVALID_CONFIG,
                      JUDGE_ERROR, LAST_ASSISTANT_TURN, LAST_USER_TURN, MAX_EMBED_TEXTS, METRIC_ERROR, MISSING_FIELD,
                      OUTPUT_TOO_LARGE, ROLE_ASSISTANT, ROLE_SYSTEM, ROLE_TOOL, ROLE_USER, TIMEOUT, AnvilError, Kind,
                      Plugin, has, last_turn, validate_config)
from ._serve import Context, Host, serve

__version__ = "0.1.0"

__all__ = ["Plugin", "Kind", "AnvilError", "Host", "Context", "serve", "validate_config", "has", "last_turn",
           "ABI_MAJOR", "ABI_MINOR", "ABI_VIOLATION", "BUDGET_EXHAUSTED", "CAPABILITY_DENIED", "INVALID_CONFIG", "JUDGE_ERROR",
           "METRIC_ERROR", "MISSING_FIELD", "OUTPUT_TOO_LARGE", "TIMEOUT", "MAX_EMBED_TEXTS", "ROLE_USER",
           "ROLE_ASSISTANT", "ROLE_SYSTEM", "ROLE_TOOL", "LAST_USER_TURN", "LAST_ASSISTANT_TURN"]
