"""Plugins, kinds, config validation and errors: everything but the wire."""

import json
import math

ABI_MAJOR = 1
# The minor this SDK speaks: conversational cases (4) and Host.embed (5).
# A host of an older minor still loads the plugin (abi/v1/README.md §5);
# it just never sends turns, and answers embed capability_denied.
ABI_MINOR = 5

# The most texts one embed request may carry (abi.MaxEmbedTexts).
MAX_EMBED_TEXTS = 2048

# Turn roles of a conversational case (ABI minor 4, abi/v1/README.md §8.1).
ROLE_USER = "user"
ROLE_ASSISTANT = "assistant"
ROLE_SYSTEM = "system"
ROLE_TOOL = "tool"

# Field names derived from turns rather than sent (ABI minor 4): the
# content of the last user or assistant turn with any content.
LAST_USER_TURN = "last_user_turn"
LAST_ASSISTANT_TURN = "last_assistant_turn"
_DERIVED = {LAST_USER_TURN: ROLE_USER, LAST_ASSISTANT_TURN: ROLE_ASSISTANT}

# Error codes of ABI v1 (abi/v1/README.md section 9).
METRIC_ERROR = "metric_error"
INVALID_CONFIG = "invalid_config"
MISSING_FIELD = "missing_field"
ABI_VIOLATION = "abi_violation"
JUDGE_ERROR = "judge_error"
CAPABILITY_DENIED = "capability_denied"
BUDGET_EXHAUSTED = "budget_exhausted"
TIMEOUT = "timeout"
OUTPUT_TOO_LARGE = "output_too_large"

_LEVELS = ("debug", "info", "warn", "error")


class AnvilError(Exception):
    """A typed ABI error. Raised from a kind, it becomes the result's error;
    raised by host.judge, it carries the host's code (capability_denied,
    budget_exhausted, judge_error, ...) so a kind can let it propagate."""

    def __init__(self, code, message, field=None, retryable=False):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.retryable = retryable

    def to_json(self):
        out = {"code": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        if self.retryable:
            out["retryable"] = True
        return out

    @classmethod
    def from_json(cls, obj):
        return cls(obj.get("code") or METRIC_ERROR, obj.get("message") or "",
                   field=obj.get("field") or None, retryable=bool(obj.get("retryable")))

    def __repr__(self):
        return "AnvilError(%r, %r, field=%r)" % (self.code, self.message, self.field)


class Kind:
    """One metric kind: a function measure(ctx, host, config, request) -> dict."""

    def __init__(self, name, fn, role="metric", description="", required_fields=(),
                 config_schema=None, fields=None):
        self.name = name
        self.fn = fn
        self.role = role
        self.description = description
        self.required_fields = list(required_fields)
        self.config_schema = config_schema
        self.fields = fields

    def descriptor(self):
        d = {"name": self.name, "role": self.role}
        if self.description:
            d["description"] = self.description
        if self.required_fields:
            d["required_fields"] = list(self.required_fields)
        if self.config_schema is not None:
            d["config_schema"] = self.config_schema
        return d


class Plugin:
    """A plugin: a name, a version, the capabilities it asks for and its
    kinds. Register metric kinds with the metric decorator::

        plugin = Plugin("mymetric", "0.1.0", capabilities=["judge"])

        @plugin.metric("my_kind", required_fields=["actual_output"],
                       config_schema={...})
        def measure(ctx, host, config, request):
            return {"score": 1.0, "reason": "..."}

    and serve it with anvil_sdk.serve(plugin).
    """

    def __init__(self, name, version, capabilities=()):
        self.name = name
        self.version = version
        self.capabilities = list(capabilities)
        self.kinds = {}

    def metric(self, name, required_fields=(), config_schema=None, description="", fields=None):
        """Decorator registering fn as the metric kind name. config_schema
        is a JSON Schema (a dict) of the config object; the SDK validates
        every config against it (unknown fields, types, required, minItems,
        minLength) and fills in defaults before calling fn. fields, if
        given, is fn(config) -> extra case fields this config needs."""

        def register(fn):
            self.add_metric(name, fn, required_fields=required_fields, config_schema=config_schema,
                            description=description, fields=fields)
            return fn

        return register

    def add_metric(self, name, fn, required_fields=(), config_schema=None, description="", fields=None):
        if name in self.kinds:
            raise ValueError("kind %r registered twice" % name)
        if config_schema is not None:
            check_schema(config_schema)
        self.kinds[name] = Kind(name, fn, "metric", description, required_fields, config_schema, fields)

    # The ABI entry points: JSON-ready dicts in, JSON-ready dicts out.

    def describe(self):
        d = {"name": self.name, "version": self.version, "abi_major": ABI_MAJOR, "abi_minor": ABI_MINOR,
             "kinds": [k.descriptor() for k in self.kinds.values()]}
        if self.capabilities:
            d["capabilities"] = list(self.capabilities)
        return d

    def _kind(self, name, role):
        k = self.kinds.get(name)
        if k is None:
            raise AnvilError(ABI_VIOLATION, "plugin %s has no kind %r" % (self.name, name))
        if k.role != role:
            raise AnvilError(ABI_VIOLATION, "kind %r is a %s kind, not a %s kind" % (name, k.role, role))
        return k

    def prepare(self, ctx, host, req):
        try:
            k = self._kind(req.get("kind"), "metric")
            validate_config(k.config_schema, req.get("config"))
        except AnvilError as e:
            return {"error": e.to_json()}
        return {}

    def measure(self, ctx, host, req):
        threshold = req.get("threshold") or 0
        try:
            k = self._kind(req.get("kind"), "metric")
            config = validate_config(k.config_schema, req.get("config"))
            case = req.get("case") or {}
            need = list(k.required_fields) + (list(k.fields(config)) if k.fields else [])
            for f in need:
                if _missing(case, f):
                    raise AnvilError(MISSING_FIELD, "case %s has no %s" % (json.dumps(case.get("id", "")), f), field=f)
            res = k.fn(ctx, host, config, req)
        except AnvilError as e:
            return {"success": False, "threshold": threshold, "error": e.to_json()}
        except Exception as e:  # a bug in the kind: a metric error, not a dead process
            return {"success": False, "threshold": threshold,
                    "error": {"code": METRIC_ERROR, "message": "%s: %s" % (type(e).__name__, e)}}
        return _measure_result(k.name, res, threshold)

    def node(self, ctx, host, req):
        try:
            self._kind(req.get("kind"), "node")
        except AnvilError as e:
            return {"error": e.to_json()}
        return {"error": {"code": ABI_VIOLATION, "message": "node kinds are not supported by this SDK version"}}


def last_turn(case, role):
    """The content of the last turn of role (ROLE_USER, ROLE_ASSISTANT, ...)
    in a conversational case whose content is non-empty, or None: what the
    derived fields last_user_turn and last_assistant_turn name (ABI
    section 8.1). A case's turns are case["turns"], a list of dicts with
    "role", "content" and, when the assistant used them, "tools_called"
    and "retrieval_context"."""
    turns = case.get("turns") or []
    for t in reversed(turns):
        if isinstance(t, dict) and t.get("role") == role and t.get("content"):
            return t["content"]
    return None


# The standard fields (abi/v1/README.md section 8): a case's own, never
# looked up in extra.
_STRINGS = ("input", "actual_output", "expected_output", "scenario", "expected_outcome", "chatbot_role")
_TEXT_LISTS = ("context", "retrieval_context")
_LISTS = ("tools_called", "expected_tools", "turns")

# White space by section 8: exactly Go's unicode.IsSpace, which the host
# applies. Not str.isspace or str.strip, which also take U+001C-U+001F.
_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                         "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def has(case, field):
    """Whether the case (request["case"]) has field, by the host's presence
    rules (abi/v1/README.md section 8): a standard string field non-empty;
    context and retrieval_context with an item that has a character other
    than white space (a list of only blank strings is absent);
    tools_called, expected_tools and turns non-empty; last_user_turn and
    last_assistant_turn a turn of that role with content; any other name a
    key of case["extra"] whose value is neither None nor ""."""
    if field in _DERIVED:
        return last_turn(case, _DERIVED[field]) is not None
    if field in _TEXT_LISTS:
        # Only strings count: the host sends nothing else here.
        return any(isinstance(s, str) and not _WHITE_SPACE.issuperset(s) for s in case.get(field) or ())
    if field in _STRINGS or field in _LISTS:
        return bool(case.get(field))
    extra = case.get("extra") or {}
    v = extra.get(field)
    return v is not None and v != ""


def _missing(case, field):
    return not has(case, field)


def _measure_result(kind, res, threshold):
    if not isinstance(res, dict):
        return {"success": False, "threshold": threshold,
                "error": {"code": METRIC_ERROR, "message": "kind %s returned %s, not a dict" % (kind, type(res).__name__)}}
    out = {"threshold": threshold}
    if res.get("error"):
        err = res["error"]
        out["success"] = False
        out["error"] = err.to_json() if isinstance(err, AnvilError) else dict(err)
        return out
    score = res.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or not 0 <= score <= 1:
        return {"success": False, "threshold": threshold,
                "error": {"code": METRIC_ERROR, "message": "kind %s returned score %r, not a number in [0, 1]" % (kind, score)}}
    out["score"] = float(score)
    out["success"] = bool(res["success"]) if "success" in res else out["score"] >= threshold
    for key in ("reason", "score_mode"):
        if res.get(key):
            out[key] = str(res[key])
    if res.get("details") is not None:
        out["details"] = res["details"]
    return out


# Config validation: the subset of JSON Schema a config schema needs.

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_KNOWN = {"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
          "minLength", "maxLength", "minimum", "maximum", "enum", "default", "description", "title", "$schema"}


def check_schema(schema, path="config_schema"):
    """Refuse, at registration, schema keywords the validator would ignore."""
    if not isinstance(schema, dict):
        raise ValueError("%s: not an object" % path)
    unknown = sorted(set(schema) - _KNOWN)
    if unknown:
        raise ValueError("%s: unsupported keyword(s) %s" % (path, ", ".join(unknown)))
    t = schema.get("type")
    for one in (t if isinstance(t, list) else [t] if t else []):
        if one not in _TYPES:
            raise ValueError("%s: unknown type %r" % (path, one))
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, "%s.properties.%s" % (path, name))
    if isinstance(schema.get("items"), dict):
        check_schema(schema["items"], path + ".items")


def validate_config(schema, config):
    """Validate config (the request's JSON value, None when absent) against
    schema and return it with defaults filled in. Errors are invalid_config
    naming the top-level field."""
    if config is None:
        config = {}
    if schema is None:
        if config != {}:
            raise AnvilError(INVALID_CONFIG, "config: this kind takes no config")
        return config
    _validate(schema, config, "config", None)
    if isinstance(config, dict) and schema.get("properties"):
        config = dict(config)
        for name, sub in schema["properties"].items():
            if name not in config and "default" in sub:
                config[name] = json.loads(json.dumps(sub["default"]))
    return config


def _validate(schema, v, path, field):
    def fail(msg):
        raise AnvilError(INVALID_CONFIG, "%s: %s" % (path, msg), field=field)

    t = schema.get("type")
    if t:
        types = t if isinstance(t, list) else [t]
        if not any(_TYPES[x](v) for x in types):
            fail("want %s, got JSON %s" % (" or ".join(types), _json_type(v)))
    if "enum" in schema and v not in schema["enum"]:
        fail("%s is not one of %s" % (json.dumps(v), json.dumps(schema["enum"])))
    if isinstance(v, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in v or v[name] is None:
                raise AnvilError(INVALID_CONFIG, "%s: field %s is required" % (path, json.dumps(name)),
                                 field=field or name)
        for name, sub in v.items():
            sub_field = field or name
            if name in props:
                if sub is None and "null" not in (props[name].get("type") or "null"):
                    continue  # null is absent (ABI section 6)
                _validate(props[name], sub, "%s.%s" % (path, name), sub_field)
            elif schema.get("additionalProperties") is False:
                raise AnvilError(INVALID_CONFIG, "%s: unknown field %s" % (path, json.dumps(name)), field=sub_field)
    if isinstance(v, list):
        if "minItems" in schema and len(v) < schema["minItems"]:
            fail("want at least %d item(s), got %d" % (schema["minItems"], len(v)))
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            fail("want at most %d item(s), got %d" % (schema["maxItems"], len(v)))
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(v):
                _validate(schema["items"], item, "%s[%d]" % (path, i), field)
    if isinstance(v, str):
        if "minLength" in schema and len(v) < schema["minLength"]:
            fail("want at least %d character(s)" % schema["minLength"] if schema["minLength"] > 1 else "must not be empty")
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            fail("want at most %d character(s)" % schema["maxLength"])
    if _TYPES["number"](v):
        if "minimum" in schema and v < schema["minimum"]:
            fail("%s is below the minimum %s" % (v, schema["minimum"]))
        if "maximum" in schema and v > schema["maximum"]:
            fail("%s is above the maximum %s" % (v, schema["maximum"]))


def _json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def check_level(level):
    level = str(level).lower()
    if level == "warning":
        level = "warn"
    return level if level in _LEVELS else "info"
