"""probe: a test plugin for the SDK itself (sdk/python/e2e_test.go), run
through the real host. Each kind exercises one SDK feature of ABI minor 4
or 5 the way a plugin author would use it."""

import math

from anvil_sdk import AnvilError, Plugin, has, last_turn, ROLE_ASSISTANT, ROLE_USER

plugin = Plugin("probe-py", "0.0.1", capabilities=["judge"])


@plugin.metric("cosine", required_fields=["actual_output", "expected_output"], description="cosine of two embeddings")
def cosine(ctx, host, config, request):
    case = request["case"]
    a, b = host.embed([case["actual_output"], case["expected_output"]], purpose="similarity")
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        raise AnvilError("metric_error", "a zero vector has no direction")
    c = dot / (na * nb)
    return {"score": max(0.0, min(1.0, c)), "reason": "cosine %.4f" % c, "details": {"cosine": c, "dimensions": len(a)}}


@plugin.metric("turns", required_fields=["turns", "last_user_turn"], description="reads a conversation's turns")
def turns(ctx, host, config, request):
    case = request["case"]
    ts = case["turns"]
    assistant = [t for t in ts if t["role"] == ROLE_ASSISTANT]
    return {
        "score": len(assistant) / len(ts),
        "reason": "%d of %d turns are the assistant's" % (len(assistant), len(ts)),
        "details": {
            "roles": [t["role"] for t in ts],
            "last_user_turn": last_turn(case, ROLE_USER),
            "last_assistant_turn": last_turn(case, ROLE_ASSISTANT),
            "tools": [c["name"] for t in ts for c in t.get("tools_called") or []],
            "retrieval_context": [r for t in ts for r in t.get("retrieval_context") or []],
            "scenario": case.get("scenario", ""),
            "chatbot_role": case.get("chatbot_role", ""),
        },
    }


@plugin.metric("presence", required_fields=["actual_output"], description="whether the case has context and retrieval_context")
def presence(ctx, host, config, request):
    case = request["case"]
    return {"score": 1.0, "reason": "presence",
            "details": {"context": has(case, "context"), "retrieval_context": has(case, "retrieval_context")}}
