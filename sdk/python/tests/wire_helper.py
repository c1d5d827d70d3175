"""Prints, as JSON, what the committed Python stubs of abi/v1/plugin.proto
say about the wire, for sdk/python/wire_test.go to compare with the Go side.
With --regenerate DIR it also regenerates the stubs into DIR (grpcio-tools)."""

import base64
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from anvil_sdk._proto import plugin_pb2, plugin_pb2_grpc  # noqa: E402


class Channel:
    """Records the methods a stub binds, with their serializers."""

    def __init__(self):
        self.methods = {}

    def unary_unary(self, path, request_serializer=None, response_deserializer=None, **_):
        self.methods[path] = (request_serializer, response_deserializer)
        return path


class Server:
    """Records the services a servicer registers."""

    def __init__(self):
        self.services = {}

    def add_generic_rpc_handlers(self, handlers):
        for h in handlers:
            self.services[h.service_name()] = h

    def add_registered_method_handlers(self, *_):
        pass


def main():
    sample = "{\"kind\":\"keyword_coverage\",\"case\":{\"id\":\"é\",\"actual_output\":\"☕\"}}".encode("utf-8")
    out = {"file": base64.b64encode(plugin_pb2.DESCRIPTOR.serialized_pb).decode(), "stub": {}, "servicer": {}}
    for stub in (plugin_pb2_grpc.PluginStub, plugin_pb2_grpc.HostStub):
        ch = Channel()
        stub(ch)
        for path, (ser, deser) in ch.methods.items():
            resp = deser(ser(plugin_pb2_grpc.google_dot_protobuf_dot_wrappers__pb2.BytesValue(value=sample)))
            out["stub"][path] = {
                "request": base64.b64encode(ser(plugin_pb2_grpc.google_dot_protobuf_dot_wrappers__pb2.BytesValue(value=sample))).decode(),
                "roundtrip": resp.value == sample,
            }
    srv = Server()
    plugin_pb2_grpc.add_PluginServicer_to_server(plugin_pb2_grpc.PluginServicer(), srv)
    plugin_pb2_grpc.add_HostServicer_to_server(plugin_pb2_grpc.HostServicer(), srv)
    for name in srv.services:
        out["servicer"][name] = True
    out["sample"] = base64.b64encode(sample).decode()
    if len(sys.argv) == 3 and sys.argv[1] == "--regenerate":
        import grpc_tools
        from grpc_tools import protoc
        from importlib.metadata import version
        out["grpcio_tools"] = version("grpcio-tools")
        proto_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "abi", "v1")
        include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        rc = protoc.main(["protoc", "-I" + proto_dir, "-I" + include, "--python_out=" + sys.argv[2],
                          "--grpc_python_out=" + sys.argv[2], os.path.join(proto_dir, "plugin.proto")])
        out["regenerate_rc"] = rc
    print(json.dumps(out))


if __name__ == "__main__":
    main()
