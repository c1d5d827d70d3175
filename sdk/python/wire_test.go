// Package pythonsdk_test checks the Python SDK against the Go side: the
// gRPC contract abi/v1/plugin.proto, the Python stubs committed from it,
// and the SDK's own unit tests. The tests run a python3 with grpcio and
// protobuf (scripts/ci-deps-py installs them) and skip without one.
package pythonsdk_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/agentanvil/anvil/sdk/native"
)

// stubsTools is the grpcio-tools version the committed stubs were
// generated with (scripts/ci-deps-py installs it): protobuf 4.25 gencode,
// which has no runtime version check.
const stubsTools = "1.62.3"

func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("ANVIL_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-I", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("no usable Python (%s with grpcio and protobuf; scripts/ci-deps-py installs them): %v: %s", py, err, out)
	}
	return py
}

type helperOut struct {
	File string `json:"file"`
	Stub map[string]struct {
		Request   string `json:"request"`
		Roundtrip bool   `json:"roundtrip"`
	} `json:"stub"`
	Servicer     map[string]bool `json:"servicer"`
	Sample       string          `json:"sample"`
	GrpcioTools  string          `json:"grpcio_tools"`
	RegenerateRC *int            `json:"regenerate_rc"`
}

func runHelper(t *testing.T, args ...string) helperOut {
	t.Helper()
	cmd := exec.Command(python(t), append([]string{"-B", "tests/wire_helper.py"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wire_helper.py: %v\n%s", err, cmd.Stderr)
	}
	var h helperOut
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("wire_helper.py output: %v\n%s", err, out)
	}
	return h
}

// The proto names the services and methods sdk/native registers, each
// taking and returning google.protobuf.BytesValue; the Python stubs bind
// the same paths and encode a request to the same bytes as Go's
// wrapperspb.
func TestProtoMatchesGo(t *testing.T) {
	h := runHelper(t)

	raw, err := base64.StdEncoding.DecodeString(h.File)
	if err != nil {
		t.Fatal(err)
	}
	fdp := new(descriptorpb.FileDescriptorProto)
	if err := proto.Unmarshal(raw, fdp); err != nil {
		t.Fatal(err)
	}
	_ = wrapperspb.Bytes(nil) // wrappers.proto is in the global registry
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatalf("plugin.proto does not resolve against Go's registry: %v", err)
	}
	bytesValue := (&wrapperspb.BytesValue{}).ProtoReflect().Descriptor().FullName()
	var paths []string
	for i := 0; i < fd.Services().Len(); i++ {
		s := fd.Services().Get(i)
		for j := 0; j < s.Methods().Len(); j++ {
			m := s.Methods().Get(j)
			if m.Input().FullName() != bytesValue || m.Output().FullName() != bytesValue || m.IsStreamingClient() || m.IsStreamingServer() {
				t.Errorf("%s: %s -> %s (streaming %t/%t), want unary %s -> %s", m.FullName(), m.Input().FullName(), m.Output().FullName(),
					m.IsStreamingClient(), m.IsStreamingServer(), bytesValue, bytesValue)
			}
			paths = append(paths, "/"+string(s.FullName())+"/"+string(m.Name()))
		}
	}
	want := []string{native.MethodDescribe, native.MethodPrepare, native.MethodMeasure, native.MethodNode, native.MethodHostJudge, native.MethodHostLog, native.MethodHostEmbed}
	sort.Strings(paths)
	sort.Strings(want)
	if !equal(paths, want) {
		t.Errorf("proto methods %v, Go's %v", paths, want)
	}

	var stubPaths []string
	sample, _ := base64.StdEncoding.DecodeString(h.Sample)
	goBytes, err := proto.Marshal(wrapperspb.Bytes(sample))
	if err != nil {
		t.Fatal(err)
	}
	for path, s := range h.Stub {
		stubPaths = append(stubPaths, path)
		pyBytes, _ := base64.StdEncoding.DecodeString(s.Request)
		if !bytes.Equal(pyBytes, goBytes) {
			t.Errorf("%s: Python encodes %x, Go %x", path, pyBytes, goBytes)
		}
		if !s.Roundtrip {
			t.Errorf("%s: the Python stub's deserializer does not read back what it wrote", path)
		}
	}
	sort.Strings(stubPaths)
	if !equal(stubPaths, want) {
		t.Errorf("Python stub paths %v, Go's %v", stubPaths, want)
	}
	if !h.Servicer[native.ServiceName] || !h.Servicer[native.HostServiceName] || len(h.Servicer) != 2 {
		t.Errorf("Python servicers register %v, want %s and %s", h.Servicer, native.ServiceName, native.HostServiceName)
	}
	// Go decodes what Python wrote, value intact.
	pyBytes, _ := base64.StdEncoding.DecodeString(h.Stub[native.MethodMeasure].Request)
	var back wrapperspb.BytesValue
	if err := proto.Unmarshal(pyBytes, &back); err != nil || !bytes.Equal(back.Value, sample) {
		t.Errorf("Go reads Python's request as %q (%v), want %q", back.Value, err, sample)
	}
}

// The committed stubs are what grpcio-tools generates from the proto now.
func TestStubsUpToDate(t *testing.T) {
	dir := t.TempDir()
	py := python(t)
	if out, err := exec.Command(py, "-I", "-c", "import grpc_tools").CombinedOutput(); err != nil {
		t.Skipf("no grpcio-tools (scripts/ci-deps-py installs it): %s", out)
	}
	h := runHelper(t, "--regenerate", dir)
	if h.GrpcioTools != stubsTools {
		t.Skipf("grpcio-tools %s installed; the stubs are generated with %s (scripts/ci-deps-py)", h.GrpcioTools, stubsTools)
	}
	if h.RegenerateRC == nil || *h.RegenerateRC != 0 {
		t.Fatalf("protoc failed (rc %v)", h.RegenerateRC)
	}
	for _, name := range []string{"plugin_pb2.py", "plugin_pb2_grpc.py"} {
		got, err := os.ReadFile(filepath.Join("src/anvil_sdk/_proto", name))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fresh) {
			t.Errorf("src/anvil_sdk/_proto/%s is stale: regenerate with\n  cd sdk/python && python3 -m grpc_tools.protoc -I../../abi/v1 --python_out=src/anvil_sdk/_proto --grpc_python_out=src/anvil_sdk/_proto ../../abi/v1/plugin.proto", name)
		}
	}
}

// The SDK's own tests (config validation, results, errors, the wire
// codec), with the standard library's unittest.
func TestPythonUnit(t *testing.T) {
	cmd := exec.Command(python(t), "-B", "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
