package native

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// embedHost answers Host/Embed with a vector {len(text)} per text and
// nothing else.
type embedHost struct{}

func (h *embedHost) Judge(context.Context, []byte) ([]byte, error) {
	return []byte(`{"responses":[]}`), nil
}
func (h *embedHost) Log(context.Context, []byte) error { return nil }
func (h *embedHost) Embed(_ context.Context, raw []byte) ([]byte, error) {
	var req abi.EmbedRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, err
	}
	res := abi.EmbedResult{Vectors: [][]float64{}}
	for _, t := range req.Texts {
		res.Vectors = append(res.Vectors, []float64{float64(len(t))})
	}
	if len(req.Texts) == 0 {
		res.Error = abi.Errorf(abi.CodeABI, "embed request: texts is empty")
	}
	return json.Marshal(res)
}

// serveHost serves desc (with impl) on loopback and returns a processHost
// dialled to it.
func serveHost(t *testing.T, desc *grpc.ServiceDesc, impl any) *processHost {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	s.RegisterService(desc, impl)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &processHost{conn: conn, token: "inv-1"}
}

// A process guest embeds through the host's Host/Embed callback; the
// host's refusal comes back with its code; a host older than ABI 1.5,
// whose callback service has no Embed, is capability_denied saying so.
func TestProcessHostEmbed(t *testing.T) {
	h := serveHost(t, &hostServiceDesc, &embedHost{})
	vecs, err := sdk.Embed(context.Background(), h, abi.EmbedRequest{Texts: []string{"abc", "de"}})
	if err != nil || len(vecs) != 2 || !slices.Equal(vecs[0], []float64{3}) || !slices.Equal(vecs[1], []float64{2}) {
		t.Fatalf("Embed = %v, %v; want [[3] [2]]", vecs, err)
	}
	_, err = h.Embed(context.Background(), abi.EmbedRequest{})
	if e, ok := err.(*abi.Error); !ok || e.Code != abi.CodeABI {
		t.Errorf("empty request: %v; want the host's abi_violation", err)
	}

	old := hostServiceDesc
	old.Methods = slices.DeleteFunc(slices.Clone(old.Methods), func(m grpc.MethodDesc) bool { return m.MethodName == "Embed" })
	h = serveHost(t, &old, &embedHost{})
	_, err = h.Embed(context.Background(), abi.EmbedRequest{Texts: []string{"abc"}})
	if e, ok := err.(*abi.Error); !ok || e.Code != abi.CodeCapability || !strings.Contains(e.Message, "older than ABI minor 5") {
		t.Errorf("older host: %v; want capability_denied naming the minor", err)
	}
}
