package plugin

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// embedServices is fakeServices that also embeds: each text's vector is
// {len(text), 1}; every request not all cached reports 7 input tokens.
type embedServices struct {
	fakeServices
	embeds   atomic.Int64
	mu       sync.Mutex
	texts    [][]string
	cacheHit bool
	short    bool // answer one vector too few
}

func (s *embedServices) Embed(_ context.Context, req abi.EmbedRequest) abi.EmbedResult {
	s.embeds.Add(1)
	s.mu.Lock()
	s.texts = append(s.texts, req.Texts)
	s.mu.Unlock()
	vs := make([][]float64, len(req.Texts))
	for i, t := range req.Texts {
		vs[i] = []float64{float64(len(t)), 1}
	}
	if s.short {
		vs = vs[1:]
	}
	u := abi.Usage{Model: "emb", InputTokens: 7, Calls: 1, Attempts: 1}
	if s.cacheHit {
		u = abi.Usage{Model: "emb", CacheHit: true}
	}
	return abi.EmbedResult{Vectors: vs, Usage: u}
}

// TestGuardEmbed: an embed request is gated by the judge capability
// (asked and granted), counts one judge call however many texts it
// carries, is charged its texts' estimated tokens before it is sent and
// what the judge reports afterwards (nothing on a cache hit), and every
// refusal leaves the budgets as they were and sends nothing.
func TestGuardEmbed(t *testing.T) {
	asks := abi.Descriptor{Name: "g", Version: "1", Capabilities: []abi.Capability{abi.CapJudge}}
	twoTexts := abi.EmbedRequest{Texts: []string{"alpha", "beta"}}
	for _, tc := range []struct {
		name   string
		svc    Services
		desc   abi.Descriptor
		grants Grants
		limits Limits
		req    abi.EmbedRequest
		code   abi.Code // "" = sent
		want   string
		tokens int // charged after a sent request
	}{
		{name: "sent", svc: &embedServices{}, desc: asks, grants: Grants{Judge: true}, req: twoTexts, tokens: 7},
		{name: "cache hit costs no tokens", svc: &embedServices{cacheHit: true}, desc: asks, grants: Grants{Judge: true}, req: twoTexts, tokens: 0},
		{name: "not granted", svc: &embedServices{}, desc: asks, req: twoTexts, code: abi.CodeCapability, want: "not granted"},
		{name: "not asked", svc: &embedServices{}, desc: abi.Descriptor{Name: "g", Version: "1"}, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeCapability, want: "does not ask"},
		{name: "services without Embed", svc: &fakeServices{}, desc: asks, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeCapability, want: "do not embed"},
		{name: "no texts", svc: &embedServices{}, desc: asks, grants: Grants{Judge: true}, req: abi.EmbedRequest{},
			code: abi.CodeABI, want: "texts is empty"},
		{name: "too many texts", svc: &embedServices{}, desc: asks, grants: Grants{Judge: true}, req: abi.EmbedRequest{Texts: make([]string, abi.MaxEmbedTexts+1)},
			code: abi.CodeABI, want: "2049 texts; at most 2048"},
		{name: "call budget", svc: &embedServices{}, desc: asks, grants: Grants{Judge: true}, limits: Limits{MaxJudgeCalls: -1}, req: twoTexts,
			code: abi.CodeBudget, want: "judge-call budget"},
		{name: "token budget", svc: &embedServices{}, desc: asks, grants: Grants{Judge: true}, limits: Limits{MaxJudgeTokens: 2},
			req: abi.EmbedRequest{Texts: []string{"twelve chars"}}, code: abi.CodeBudget, want: "~3 tokens"},
		{name: "vectors missing", svc: &embedServices{short: true}, desc: asks, grants: Grants{Judge: true}, req: twoTexts,
			code: abi.CodeJudge, want: "1 vectors for 2 texts", tokens: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := tc.limits
			if limits.MaxJudgeCalls < 0 {
				limits.MaxJudgeCalls = 0
				limits = limits.WithDefaults()
				limits.MaxJudgeCalls = 0
			} else {
				limits = limits.WithDefaults()
			}
			g := newGuard(tc.svc, Info{Descriptor: tc.desc}, Options{Grants: tc.grants, Limits: limits}, nil)
			res := g.embed(context.Background(), tc.req)
			var sent int64
			if s, ok := tc.svc.(*embedServices); ok {
				sent = s.embeds.Load()
			}
			calls, tokens := g.used()
			if tc.code == "" {
				if res.Error != nil || sent != 1 || len(res.Vectors) != len(tc.req.Texts) {
					t.Fatalf("want it sent and answered, got %+v (%d sent)", res, sent)
				}
				if calls != 1 || tokens != tc.tokens {
					t.Errorf("used %d calls, %d tokens; want 1 call, %d tokens", calls, tokens, tc.tokens)
				}
				return
			}
			if res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, tc.want) {
				t.Fatalf("want %s %q, got %+v", tc.code, tc.want, res.Error)
			}
			if res.Vectors == nil || len(res.Vectors) != 0 {
				t.Errorf("vectors %v; want [] with an error", res.Vectors)
			}
			if tc.code == abi.CodeJudge { // sent, and charged, but answered wrong
				if sent != 1 || calls != 1 || tokens != tc.tokens {
					t.Errorf("%d sent, used %d calls, %d tokens", sent, calls, tokens)
				}
				return
			}
			if sent != 0 || calls != 0 || tokens != 0 {
				t.Errorf("a refused request: %d sent, charged %d calls, %d tokens", sent, calls, tokens)
			}
		})
	}
}

// similarityRequest measures the similarity kind on "abcd" against
// "ab": the embedServices vectors {4,1} and {2,1}, cosine 9/√85.
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
				svc := &embedServices{}
				res, err := p.Measure(context.Background(), svc, similarityRequest())
				if err != nil {
					t.Fatal(err)
				}
				if !granted {
					if res.Error == nil || res.Error.Code != abi.CodeCapability || svc.embeds.Load() != 0 {
						t.Errorf("ungranted: %+v, %d embeds; want capability_denied, none", res.Error, svc.embeds.Load())
					}
					continue
				}
				if res.Error != nil || res.Score == nil || math.Abs(*res.Score-want) > 1e-12 {
					t.Fatalf("result %+v (error %+v); want score %v", res, res.Error, want)
				}
				if svc.embeds.Load() != 1 || !slices.Equal(svc.texts[0], []string{"abcd", "ab"}) {
					t.Errorf("embeds %d, texts %q; want one request of [abcd ab]", svc.embeds.Load(), svc.texts)
				}
			}
		})
	}
}

// A guest built with this SDK imports anvil_embed only when it embeds, so
// a plugin that does not still loads on a host older than ABI 1.5; the
// host provides anvil_embed, so one that does loads here; and a host
// that lacks it refuses the module at load naming the import.
func TestEmbedImport(t *testing.T) {
	importsEmbed := func(name string) bool {
		b, err := os.ReadFile(guestPath(name))
		if err != nil {
			t.Fatal(err)
		}
		ims, err := moduleImports(b)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ims, func(im wasmImport) bool { return im.module == abi.HostNamespace && im.name == abi.HostEmbed })
	}
	for _, name := range []string{"textcheck", "geval", "dag", "rag", "judge"} {
		if importsEmbed(name) {
			t.Errorf("%s imports %s; a guest that does not embed must not", name, abi.HostEmbed)
		}
	}
	if !importsEmbed("similarity") {
		t.Fatalf("similarity does not import %s", abi.HostEmbed)
	}
	b, err := os.ReadFile(guestPath("similarity"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImports(b); err != nil {
		t.Errorf("checkImports(similarity): %v", err)
	}
	// A host of ABI 1.4 or older: its namespace has no anvil_embed.
	saved := providedImports[abi.HostNamespace]
	providedImports[abi.HostNamespace] = map[string]bool{abi.HostJudge: true, abi.HostLog: true}
	defer func() { providedImports[abi.HostNamespace] = saved }()
	err = checkImports(b)
	if err == nil || !strings.Contains(err.Error(), `module "extism:host/user" function "anvil_embed"`) {
		t.Errorf("older host: %v; want the anvil_embed import named", err)
	}
}
