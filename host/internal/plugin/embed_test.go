package plugin

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
)

// similarityRequest measures the similarity kind on "abcd" against
// "ab": the EmbedServices vectors {4,1} and {2,1}, cosine 9/√85.
func similarityRequest() *abi.MeasureRequest {
	return &abi.MeasureRequest{Kind: "similarity", Metric: "sim", Config: json.RawMessage(`{"value":"ab"}`), Threshold: 0.5,
		Case: abi.TestCase{ID: "c", Input: "q", ActualOutput: "abcd"}}
}

// TestEmbedOverTransports: the similarity kind scores the same through
// the Wasm host function anvil_embed, the process transport's Host/Embed
// callback and the inproc guard, each embed request reaching Services
// once with both texts; without the grant each answers capability_denied
// and nothing reaches Services.
func TestEmbedOverTransports(t *testing.T) {
	want := 9 / math.Sqrt(85)
	for _, tr := range []string{TransportWasm, TransportProcess} {
		t.Run(tr, func(t *testing.T) {
			for _, granted := range []bool{true, false} {
				opts := Options{Grants: Grants{Judge: granted}}
				var p Plugin
				if tr == TransportWasm {
					p = load(t, "similarity", opts)
				} else {
					p = loadProcess(t, "similarity", opts)
				}
				svc := &plugintest.EmbedServices{}
				res, err := p.Measure(context.Background(), svc, similarityRequest())
				if err != nil {
					t.Fatal(err)
				}
				if !granted {
					if res.Error == nil || res.Error.Code != abi.CodeCapability || svc.Embeds.Load() != 0 {
						t.Errorf("ungranted: %+v, %d embeds; want capability_denied, none", res.Error, svc.Embeds.Load())
					}
					continue
				}
				if res.Error != nil || res.Score == nil || math.Abs(*res.Score-want) > 1e-12 {
					t.Fatalf("result %+v (error %+v); want score %v", res, res.Error, want)
				}
				if svc.Embeds.Load() != 1 || !slices.Equal(svc.Texts[0], []string{"abcd", "ab"}) {
					t.Errorf("embeds %d, texts %q; want one request of [abcd ab]", svc.Embeds.Load(), svc.Texts)
				}
			}
		})
	}
}
