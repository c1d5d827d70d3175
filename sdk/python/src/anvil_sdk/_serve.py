"""The process transport: go-plugin's handshake and services, and the
anvil.v1.Plugin service over a Plugin. See docs/process-plugins.md."""

import json
import math
import os
import signal
import sys
import threading
from concurrent import futures

import grpc
from google.protobuf import wrappers_pb2

from ._plugin import (ABI_MAJOR, ABI_VIOLATION, CAPABILITY_DENIED, MAX_EMBED_TEXTS, OUTPUT_TOO_LARGE, TIMEOUT, AnvilError,
                      check_level)
from ._proto import plugin_pb2_grpc

MAGIC_COOKIE_KEY = "ANVIL_PLUGIN"
MAGIC_COOKIE_VALUE = "anvil-process-plugin"
META_HOST_BROKER = "anvil-host-broker"
META_INVOCATION = "anvil-invocation"
CORE_PROTOCOL_VERSION = 1
# go-plugin forgets a broker id nobody dialled after five seconds.
BROKER_WAIT = 5.0
_MAX_MSG = 2**31 - 1
_OPTIONS = [("grpc.max_receive_message_length", _MAX_MSG), ("grpc.max_send_message_length", _MAX_MSG)]


# go-plugin's own messages, encoded by hand: four tiny messages do not
# justify generated code (and its protobuf-version coupling).

def _varint(b, i):
    shift = result = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return result, i
        shift += 7


def _fields(b):
    """The (number, value) pairs of a protobuf message: varints as int,
    length-delimited fields as bytes."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = bytes(b[i:i + n]), i + n
        elif wt == 1:
            v, i = bytes(b[i:i + 8]), i + 8
        elif wt == 5:
            v, i = bytes(b[i:i + 4]), i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        out.append((num, v))
    return out


def decode_conn_info(b):
    """plugin.ConnInfo {uint32 service_id = 1; string network = 2; string address = 3; Knock knock = 4}"""
    info = {"service_id": 0, "network": "", "address": "", "knock": None}
    for num, v in _fields(b):
        if num == 1:
            info["service_id"] = v
        elif num == 2:
            info["network"] = v.decode("utf-8")
        elif num == 3:
            info["address"] = v.decode("utf-8")
        elif num == 4:
            info["knock"] = dict(_fields(v))
    return info


_SERVING = b"\x08\x01"  # grpc.health.v1.HealthCheckResponse{status: SERVING}


def _ident(b):
    return b


class _Broker:
    """The plugin's side of go-plugin's GRPCBroker: the host sends, on the
    stream it opens, the address of each service it serves to the plugin;
    dial(id) waits for that address and connects."""

    def __init__(self):
        self._cond = threading.Condition()
        self._infos = {}
        self._conns = {}

    def start_stream(self, request_iterator, context):
        for raw in request_iterator:
            info = decode_conn_info(raw)
            with self._cond:
                self._infos[info["service_id"]] = info
                self._cond.notify_all()
        return
        yield  # a generator: this side never sends

    def dial(self, service_id):
        with self._cond:
            if service_id in self._conns:
                return self._conns[service_id]
            if not self._cond.wait_for(lambda: service_id in self._infos, BROKER_WAIT):
                raise RuntimeError("timeout waiting for the host's connection info for broker id %d" % service_id)
            info = self._infos[service_id]
            if info["network"] != "unix":
                raise RuntimeError("broker id %d: network %r, want unix" % (service_id, info["network"]))
            conn = grpc.insecure_channel("unix:" + info["address"], options=_OPTIONS)
            self._conns[service_id] = conn
            return conn


# _FOREVER is beyond any deadline a host sets (its longest is about a day):
# grpcio reports the time left of a call without a deadline as about 1e19
# seconds, and refuses such a timeout at once (DEADLINE_EXCEEDED).
_FOREVER = 1e8


def _remaining(grpc_context):
    """Seconds left of the host's call, or None when it has no deadline."""
    if grpc_context is None:
        return None
    left = grpc_context.time_remaining()
    if left is None or left > _FOREVER:
        return None
    return left


class Context:
    """What a kind knows about its invocation besides the request."""

    def __init__(self, grpc_context, token):
        self._ctx = grpc_context
        self.invocation = token

    def time_remaining(self):
        """Seconds left before the host's deadline for this call (None: no deadline)."""
        return _remaining(self._ctx)

    def is_active(self):
        return self._ctx.is_active()


class Host:
    """The host's services for one invocation: judge, embed and log, through the
    host's anvil.v1.Host callback service. Every call carries the
    invocation's token, so the host applies its grants and budgets."""

    def __init__(self, channel, token, dial_error=None, grpc_context=None):
        self._stub = plugin_pb2_grpc.HostStub(channel) if channel is not None else None
        self._token = token
        self._dial_error = dial_error
        self._ctx = grpc_context

    def _call(self, method, payload, unimplemented=None):
        if self._dial_error is not None:
            raise AnvilError(ABI_VIOLATION, "host callback service: %s" % self._dial_error)
        if self._stub is None:
            raise AnvilError(ABI_VIOLATION, "the host named no callback service in this request")
        timeout = _remaining(self._ctx)
        try:
            out = getattr(self._stub, method)(wrappers_pb2.BytesValue(value=payload), timeout=timeout,
                                              metadata=((META_INVOCATION, self._token),))
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.UNIMPLEMENTED and unimplemented:
                raise AnvilError(CAPABILITY_DENIED, unimplemented)
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise AnvilError(OUTPUT_TOO_LARGE, "%s callback refused by the host: %s" % (method.lower(), e.details()))
            if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                raise AnvilError(TIMEOUT, "%s callback: %s" % (method.lower(), e.details()))
            raise AnvilError(ABI_VIOLATION, "%s callback failed: %s: %s" % (method.lower(), code.name, e.details()))
        return out.value

    def judge(self, requests):
        """Send one judge batch (a list of JudgeRequest dicts); return the
        list of JudgeResponse dicts, in request order. A refused batch
        raises AnvilError with the host's code (capability_denied,
        budget_exhausted, ...); per-response errors are in each
        response's "error"."""
        payload = json.dumps({"requests": list(requests)}, ensure_ascii=False, allow_nan=False).encode("utf-8")
        out = self._call("Judge", payload)
        try:
            res = json.loads(out)
        except ValueError as e:
            raise AnvilError(ABI_VIOLATION, "decode judge result: %s" % e)
        if res.get("error"):
            raise AnvilError.from_json(res["error"])
        return res.get("responses") or []

    def embed(self, texts, judge=None, purpose=None):
        """Embed texts (a list of 1 to 2048 strings) with the embedding
        model of a configured judge (judge=None: the metric's judge) and
        return one vector (a list of floats) per text, in order, all of one
        length (ABI minor 5, through the host's Host/Embed callback). It
        needs the judge capability and counts as one judge call. A refused
        or failed request raises AnvilError with the host's code
        (capability_denied, budget_exhausted, invalid_config when the
        judge has no embedding_model, judge_error, ...); a host older than
        minor 5, which has no Embed callback, is capability_denied."""
        texts = list(texts)
        if not texts or len(texts) > MAX_EMBED_TEXTS:
            raise AnvilError(ABI_VIOLATION, "embed: %d texts; want 1 to %d" % (len(texts), MAX_EMBED_TEXTS))
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise AnvilError(ABI_VIOLATION, "embed: texts[%d] is %s, not a str" % (i, type(t).__name__))
        req = {"texts": texts}
        if judge:
            req["judge"] = str(judge)
        if purpose:
            req["purpose"] = str(purpose)
        payload = json.dumps(req, ensure_ascii=False, allow_nan=False).encode("utf-8")
        out = self._call("Embed", payload, unimplemented=(
            "the host does not embed texts (its callback service has no Embed: older than ABI minor 5)"))
        try:
            res = json.loads(out)
        except ValueError as e:
            raise AnvilError(ABI_VIOLATION, "decode embed result: %s" % e)
        return embed_vectors(res, len(texts))

    def log(self, level, message, **attrs):
        """Record one line in the host's log. Never fails: a record the
        host cannot take is dropped."""
        rec = {"level": check_level(level), "message": str(message)}
        if attrs:
            rec["attrs"] = attrs
        try:
            payload = json.dumps(rec, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
            self._call("Log", payload)
        except (AnvilError, ValueError):
            pass


def embed_vectors(res, n):
    """The vectors of an EmbedResult (a decoded dict) answering n texts,
    checked as the ABI promises them (section 7.8): its error raised as
    AnvilError with the host's code; otherwise n vectors, all of one
    non-zero length, every value a finite number. Anything else is an
    abi_violation rather than a similarity computed over garbage."""
    if not isinstance(res, dict):
        raise AnvilError(ABI_VIOLATION, "embed result: not a JSON object")
    if res.get("error"):
        if not isinstance(res["error"], dict):
            raise AnvilError(ABI_VIOLATION, "embed result: error is not an object")
        raise AnvilError.from_json(res["error"])
    vectors = res.get("vectors")
    if not isinstance(vectors, list) or len(vectors) != n:
        raise AnvilError(ABI_VIOLATION, "embed result: %s vectors for %d texts"
                         % (len(vectors) if isinstance(vectors, list) else "no", n))
    dims = None
    out = []
    for i, v in enumerate(vectors):
        if not isinstance(v, list) or not v:
            raise AnvilError(ABI_VIOLATION, "embed result: vectors[%d] is not a non-empty list" % i)
        if dims is None:
            dims = len(v)
        elif len(v) != dims:
            raise AnvilError(ABI_VIOLATION, "embed result: vectors[%d] has %d dimensions, vectors[0] %d" % (i, len(v), dims))
        row = []
        for x in v:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise AnvilError(ABI_VIOLATION, "embed result: vectors[%d] holds %r, not a finite number" % (i, x))
            row.append(float(x))
        out.append(row)
    return out


class _PluginServicer(plugin_pb2_grpc.PluginServicer):
    def __init__(self, plugin, broker):
        self.plugin = plugin
        self.broker = broker

    def _meta(self, context):
        md = dict(context.invocation_metadata() or ())
        return md.get(META_HOST_BROKER), md.get(META_INVOCATION, "")

    def _host(self, context):
        broker_id, token = self._meta(context)
        if broker_id is None:
            return Host(None, token, grpc_context=context), token
        try:
            return Host(self.broker.dial(int(broker_id)), token, grpc_context=context), token
        except Exception as e:  # noqa: BLE001 - reported through the kind's callbacks
            return Host(None, token, dial_error=e, grpc_context=context), token

    def _decode(self, request, context):
        try:
            req = json.loads(bytes(request.value).decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("not a JSON object")
            return req
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "anvil: decode request: %s" % e)

    def _respond(self, result, context):
        try:
            out = json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "anvil: encode result: %s" % e)
        return wrappers_pb2.BytesValue(value=out.encode("utf-8"))

    def Describe(self, request, context):
        broker_id, _ = self._meta(context)
        if broker_id is not None:
            # Dial now: go-plugin forgets an undialled broker id after 5 s.
            try:
                self.broker.dial(int(broker_id))
            except Exception as e:  # noqa: BLE001
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "anvil: dial the host's callback service: %s" % e)
        return self._respond(self.plugin.describe(), context)

    def Prepare(self, request, context):
        req = self._decode(request, context)
        host, token = self._host(context)
        return self._respond(self.plugin.prepare(Context(context, token), host, req), context)

    def Measure(self, request, context):
        req = self._decode(request, context)
        host, token = self._host(context)
        return self._respond(self.plugin.measure(Context(context, token), host, req), context)

    def Node(self, request, context):
        req = self._decode(request, context)
        host, token = self._host(context)
        return self._respond(self.plugin.node(Context(context, token), host, req), context)


def _socket_group(path, group):
    import grp
    gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    os.chown(path, -1, gid)
    os.chmod(path, 0o660)


def serve(plugin, max_workers=16):
    """Serve plugin as an Anvil process plugin until the host stops the
    process. Run by hand (without the host's handshake cookie) it says it
    is a plugin and exits 1."""
    sys.dont_write_bytecode = True  # the sandbox's filesystem is read-only
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This binary is a plugin. These are not meant to be executed directly.\n"
                         "Please execute the program that consumes these plugins, which will\n"
                         "load any plugins automatically\n")
        sys.stderr.flush()
        sys.exit(1)
    versions = [v.strip() for v in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(ABI_MAJOR)).split(",")]
    if str(ABI_MAJOR) not in versions:
        sys.stderr.write("anvil: the host speaks protocol versions %s; this plugin speaks %d\n"
                         % (",".join(versions), ABI_MAJOR))
        sys.exit(1)
    # Ctrl-C reaches the whole process group; the host decides when its
    # plugins stop (as go-plugin's plugins do).
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    sock_dir = os.environ.get("PLUGIN_UNIX_SOCKET_DIR")
    if not sock_dir:
        import tempfile
        sock_dir = tempfile.mkdtemp(prefix="plugin-dir")
    path = os.path.join(sock_dir, "plugin-%d-%s" % (os.getpid(), os.urandom(4).hex()))

    broker = _Broker()
    done = threading.Event()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=_OPTIONS)
    plugin_pb2_grpc.add_PluginServicer_to_server(_PluginServicer(plugin, broker), server)

    def shutdown(request, context):
        done.set()
        return b""

    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(lambda req, ctx: _SERVING, _ident, _ident),
        }),
        grpc.method_handlers_generic_handler("plugin.GRPCBroker", {
            "StartStream": grpc.stream_stream_rpc_method_handler(broker.start_stream, _ident, _ident),
        }),
        grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": grpc.unary_unary_rpc_method_handler(shutdown, _ident, _ident),
        }),
    ))
    if server.add_insecure_port("unix:" + path) == 0:
        sys.stderr.write("anvil: cannot listen on %s\n" % path)
        sys.exit(1)
    server.start()
    group = os.environ.get("PLUGIN_UNIX_SOCKET_GROUP")
    if group:
        _socket_group(path, group)
    sys.stdout.write("%d|%d|unix|%s|grpc|\n" % (CORE_PROTOCOL_VERSION, ABI_MAJOR, path))
    sys.stdout.flush()
    done.wait()
    server.stop(1).wait()
    try:
        os.unlink(path)
    except OSError:
        pass
    sys.exit(0)
