package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/oci"
)

// newRegistry is an in-process OCI registry (go-containerregistry's, the
// one its own tests and many others use) on a loopback port.
func newRegistry(t *testing.T, referrersAPI bool) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(referrersAPI), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

var judgeSummary = oci.Summary{Name: "kw", Version: "0.1.0", ABI: "1.1", Kinds: []string{"metric/keyword_coverage"}, Capabilities: []string{"judge"}}

func TestParseRef(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		in      string
		target  bool
		want    oci.Ref
		wantErr string
	}{
		{in: "oci://127.0.0.1:5000/team-a/textcheck:1.0", target: true, want: oci.Ref{Registry: "127.0.0.1:5000", Repository: "team-a/textcheck", Tag: "1.0"}},
		{in: "oci://ghcr.io/org/p@" + d, target: true, want: oci.Ref{Registry: "ghcr.io", Repository: "org/p", Digest: d}},
		{in: "oci://ghcr.io/org/p:1@" + d, target: true, want: oci.Ref{Registry: "ghcr.io", Repository: "org/p", Tag: "1", Digest: d}},
		{in: "oci://localhost:5000/p", target: false, want: oci.Ref{Registry: "localhost:5000", Repository: "p"}},
		{in: "oci://localhost:5000/p", target: true, wantErr: "name a tag"},
		{in: "ghcr.io/org/p:1", wantErr: "want oci://"},
		{in: "oci://ghcr.io", wantErr: "no repository"},
		{in: "oci://ghcr.io/Org/p:1", wantErr: "invalid"},
		{in: "oci://ghcr.io/org/p@sha256:abc", wantErr: "not sha256"},
		{in: "oci://ghcr.io/org/p@md5:" + strings.Repeat("a", 32), wantErr: "not sha256"},
	} {
		got, err := oci.ParseRef(c.in, c.target)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseRef(%q) = %v, want error with %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if err == nil && got.String() != c.in {
			t.Errorf("String() = %q, want %q", got.String(), c.in)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{"127.0.0.1:5000": true, "localhost": true, "[::1]:5000": true, "ghcr.io": false, "10.0.0.1:5000": false, "localhost.evil.com": false} {
		if got := (oci.Ref{Registry: host}).IsLoopback(); got != want {
			t.Errorf("IsLoopback(%s) = %v, want %v", host, got, want)
		}
	}
}

// TestPushPullRoundTrip pushes a plugin, lists it, fetches its manifest and
// layer, and attaches and reads back a signature — with and without the
// registry's referrers API (oras-go falls back to the tag schema, as with
// the distribution registry 2.x).
func TestPushPullRoundTrip(t *testing.T) {
	t.Parallel()
	for _, api := range []bool{true, false} {
		ctx := context.Background()
		host := newRegistry(t, api)
		ref, err := oci.ParseRef("oci://"+host+"/team-a/kw:1.0", true)
		if err != nil {
			t.Fatal(err)
		}
		c := &oci.Client{}
		module := []byte("\x00asm\x01\x00\x00\x00 pretend module")
		desc, err := c.Push(ctx, ref, oci.Artifact{Module: module, Transport: oci.TransportWasm, Summary: judgeSummary})
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Push(ctx, ref, oci.Artifact{Module: module, Transport: oci.TransportWasm, Summary: judgeSummary})
		if err != nil || again.Digest != desc.Digest {
			t.Errorf("pushing the same module again: %s, %v; want the same digest %s", again.Digest, err, desc.Digest)
		}
		tags, err := c.Tags(ctx, ref)
		if err != nil || len(tags) != 1 || tags[0] != "1.0" {
			t.Errorf("Tags = %v, %v", tags, err)
		}
		f, err := c.FetchPlugin(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if f.Manifest.Digest != desc.Digest || f.Transport != oci.TransportWasm || f.Layer.MediaType != oci.WasmLayer {
			t.Errorf("fetched %+v", f.Plugin)
		}
		if strings.Join(f.Summary.Capabilities, ",") != "judge" || f.Summary.Name != "kw" {
			t.Errorf("summary = %+v", f.Summary)
		}
		var cfg map[string]any
		if err := json.Unmarshal(f.ConfigRaw, &cfg); err != nil || cfg["architecture"] != "wasm" || cfg["os"] != "wasip1" {
			t.Errorf("wasm config = %s", f.ConfigRaw)
		}
		got, err := c.FetchLayer(ctx, ref, f.Plugin, 1<<20)
		if err != nil || string(got) != string(module) {
			t.Errorf("FetchLayer = %q, %v", got, err)
		}
		if _, err := c.FetchLayer(ctx, ref, f.Plugin, 8); err == nil || !strings.Contains(err.Error(), "above max_module_bytes") {
			t.Errorf("FetchLayer over the cap: %v", err)
		}
		byDigest, err := c.FetchPlugin(ctx, ref.WithDigest(desc.Digest.String()))
		if err != nil || byDigest.Manifest.Digest != desc.Digest {
			t.Errorf("fetch by digest: %v", err)
		}
		sigs, err := c.Signatures(ctx, ref, f.Manifest)
		if err != nil || len(sigs) != 0 {
			t.Errorf("signatures before signing: %d, %v", len(sigs), err)
		}
		doc := []byte(`{"version":1}`)
		if _, err := c.PushSignature(ctx, ref, f.Manifest, doc); err != nil {
			t.Fatal(err)
		}
		sigs, err = c.Signatures(ctx, ref, f.Manifest)
		if err != nil || len(sigs) != 1 || string(sigs[0]) != string(doc) {
			t.Errorf("referrers API %v: signatures = %q, %v", api, sigs, err)
		}

		// A conformance attestation is a referrer of its own type: not
		// a signature, and signed itself as a manifest.
		report := []byte(`{"version":1,"passed":3}`)
		att, err := c.PushConformance(ctx, ref, f.Manifest, report)
		if err != nil {
			t.Fatal(err)
		}
		atts, err := c.Conformance(ctx, ref, f.Manifest)
		if err != nil || len(atts) != 1 || atts[0].Manifest.Digest != att.Digest || string(atts[0].Doc) != string(report) {
			t.Fatalf("referrers API %v: attestations = %+v, %v", api, atts, err)
		}
		if sigs, err := c.Signatures(ctx, ref, f.Manifest); err != nil || len(sigs) != 1 {
			t.Errorf("an attestation was read as a signature: %d signatures, %v", len(sigs), err)
		}
		if _, err := c.PushSignature(ctx, ref, att, doc); err != nil {
			t.Fatal(err)
		}
		if sigs, err := c.Signatures(ctx, ref, att); err != nil || len(sigs) != 1 {
			t.Errorf("the attestation's signature: %d, %v", len(sigs), err)
		}
		if repos, err := c.Repositories(ctx, oci.Ref{Registry: host}); err != nil || strings.Join(repos, ",") != "team-a/kw" {
			t.Errorf("Repositories = %v, %v", repos, err)
		}
	}
}

func TestParseRegistry(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"oci://127.0.0.1:5000": "127.0.0.1:5000", "oci://ghcr.io/": "ghcr.io", "localhost:5000": "localhost:5000",
		"oci://ghcr.io/org/p": "", "oci://": "", "oci://a@b": ""} {
		got, err := oci.ParseRegistry(in)
		if (err != nil) != (want == "") || got.Registry != want {
			t.Errorf("ParseRegistry(%q) = %+v, %v; want %q", in, got, err, want)
		}
	}
}

func TestProcessArtifactForThisHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref, _ := oci.ParseRef("oci://"+newRegistry(t, true)+"/team-a/native:1", true)
	c := &oci.Client{}
	if _, err := c.Push(ctx, ref, oci.Artifact{Module: []byte("\x7fELF..."), Transport: oci.TransportProcess, Summary: judgeSummary}); err != nil {
		t.Fatal(err)
	}
	f, err := c.FetchPlugin(ctx, ref)
	if err != nil || f.Transport != oci.TransportProcess || f.Layer.MediaType != oci.ProcessLayer {
		t.Fatalf("%+v, %v", f.Plugin, err)
	}
	other, _ := oci.ParseRef("oci://"+ref.Registry+"/team-a/native:other", true)
	if _, err := c.Push(ctx, other, oci.Artifact{Module: []byte("x"), Transport: oci.TransportProcess, OS: "plan9", Arch: "mips", Summary: judgeSummary}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FetchPlugin(ctx, other); err == nil || !strings.Contains(err.Error(), "plan9/mips cannot run") {
		t.Errorf("a process plugin for another platform: %v", err)
	}
}

// TestParsePluginRefuses: manifests Anvil must not run, each refused with
// what is wrong.
func TestParsePluginRefuses(t *testing.T) {
	t.Parallel()
	wasmCfg := []byte(`{"architecture":"wasm","os":"wasip1","layerDigests":[]}`)
	layer := ocispec.Descriptor{MediaType: oci.WasmLayer, Digest: digest.FromString("m"), Size: 1}
	ann := judgeSummary.Annotations(oci.TransportWasm)
	build := func(edit func(m *ocispec.Manifest, cfg *[]byte)) (ocispec.Descriptor, []byte, []byte) {
		cfg := wasmCfg
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Layers: []ocispec.Descriptor{layer}, Annotations: map[string]string{}}
		for k, v := range ann {
			m.Annotations[k] = v
		}
		m.SchemaVersion = 2
		edit(&m, &cfg)
		m.Config = ocispec.Descriptor{MediaType: m.Config.MediaType, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
		if m.Config.MediaType == "" {
			m.Config.MediaType = oci.WasmConfig
		}
		raw, _ := json.Marshal(m)
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}, raw, cfg
	}
	for _, c := range []struct {
		name string
		edit func(m *ocispec.Manifest, cfg *[]byte)
		want string
	}{
		{"ok", func(*ocispec.Manifest, *[]byte) {}, ""},
		{"legacy layer type", func(m *ocispec.Manifest, _ *[]byte) { m.Layers[0].MediaType = oci.WasmLayerLegacy }, ""},
		{"two layers", func(m *ocispec.Manifest, _ *[]byte) { m.Layers = append(m.Layers, layer) }, "2 layers"},
		{"image layer", func(m *ocispec.Manifest, _ *[]byte) { m.Layers[0].MediaType = ocispec.MediaTypeImageLayerGzip }, "layer media type"},
		{"container image", func(m *ocispec.Manifest, _ *[]byte) { m.Config.MediaType = ocispec.MediaTypeImageConfig }, "is not a plugin"},
		{"wasm for another os", func(_ *ocispec.Manifest, cfg *[]byte) { *cfg = []byte(`{"architecture":"wasm","os":"wasip2"}`) }, "wasip2"},
		{"no annotations", func(m *ocispec.Manifest, _ *[]byte) { delete(m.Annotations, oci.AnnotationCapabilities) }, "lacks the descriptor annotations " + oci.AnnotationCapabilities},
		{"control sequence", func(m *ocispec.Manifest, _ *[]byte) { m.Annotations[oci.AnnotationName] = "kw\x1b[2J" }, "holds characters outside"},
		{"transport lie", func(m *ocispec.Manifest, _ *[]byte) { m.Annotations[oci.AnnotationTransport] = "process" }, "transport annotation"},
	} {
		desc, raw, cfg := build(c.edit)
		p, err := oci.ParsePlugin(desc, raw, cfg)
		if c.want == "" {
			if err != nil || p.Transport != oci.TransportWasm {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	desc, raw, cfg := build(func(*ocispec.Manifest, *[]byte) {})
	if _, err := oci.ParsePlugin(desc, raw, append(cfg, ' ')); err == nil || !strings.Contains(err.Error(), "config blob does not match") {
		t.Errorf("a config that is not the one the manifest names: %v", err)
	}
	raw[len(raw)-2] ^= 1
	if _, err := oci.ParsePlugin(desc, raw, cfg); err == nil || !strings.Contains(err.Error(), "manifest bytes have digest") {
		t.Errorf("manifest bytes that are not the digest's: %v", err)
	}
}

func TestSummaryCheck(t *testing.T) {
	t.Parallel()
	real := abi.Descriptor{Name: "kw", Version: "0.1.0", ABIMajor: 1, ABIMinor: 1, Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []abi.KindDescriptor{{Name: "keyword_coverage", Role: abi.RoleMetric}}}
	if err := judgeSummary.Check(real); err != nil {
		t.Errorf("a true summary: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(s *oci.Summary)
		want string
	}{
		{"capabilities hidden", func(s *oci.Summary) { s.Capabilities = []string{} }, "annotations say [], the module asks for [judge]"},
		{"kind hidden", func(s *oci.Summary) { s.Kinds = []string{} }, "kinds: annotations say []"},
		{"abi", func(s *oci.Summary) { s.ABI = "1.0" }, "abi: annotations say 1.0"},
		{"name", func(s *oci.Summary) { s.Name = "other" }, "name: annotations say other@0.1.0"},
	} {
		s := judgeSummary
		s.Kinds = append([]string(nil), s.Kinds...)
		c.edit(&s)
		if err := s.Check(real); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A kind's own capabilities count (ABI minor 1).
	perKind := abi.Descriptor{Name: "kw", Version: "0.1.0", ABIMajor: 1, ABIMinor: 1,
		Kinds: []abi.KindDescriptor{{Name: "keyword_coverage", Role: abi.RoleMetric, Capabilities: []abi.Capability{abi.CapJudge}}}}
	if got := oci.SummaryOf(perKind).Capabilities; len(got) != 1 || got[0] != "judge" {
		t.Errorf("per-kind capability not summarised: %v", got)
	}
}

// TestSignatureOnRegistryRefusingDeletes signs a plugin twice on a
// registry without the referrers API that refuses DELETE with 405, as
// the distribution registry does by default: the second signature
// replaces the referrers index, whose old version cannot be deleted. Both
// signatures land and read back, and the push succeeds with a warning.
func TestSignatureOnRegistryRefusingDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := registry.New(registry.WithReferrersSupport(false), registry.Logger(log.New(io.Discard, "", 0)))
	var deletes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
			http.Error(w, `{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`, http.StatusMethodNotAllowed)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ref, err := oci.ParseRef("oci://"+strings.TrimPrefix(srv.URL, "http://")+"/team-a/kw:1.0", true)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	c := &oci.Client{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	desc, err := c.Push(ctx, ref, oci.Artifact{Module: []byte("\x00asm\x01\x00\x00\x00"), Transport: oci.TransportWasm, Summary: judgeSummary})
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, doc := range []string{`{"version":1,"by":"team-a"}`, `{"version":1,"by":"team-b"}`} {
		if _, err := c.PushSignature(ctx, ref.WithDigest(desc.Digest.String()), desc, []byte(doc)); err != nil {
			t.Fatalf("signing with %s: %v", doc, err)
		}
		docs = append(docs, doc)
	}
	if deletes.Load() == 0 {
		t.Fatal("the registry was never asked to delete the old referrers index: the test does not exercise the 405")
	}
	if !strings.Contains(logged.String(), "refused to delete the previous referrers index") {
		t.Errorf("no warning about the kept index; log: %s", logged.String())
	}
	sigs, err := c.Signatures(ctx, ref, desc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sigs {
		got = append(got, string(s))
	}
	slices.Sort(got)
	if !slices.Equal(got, docs) {
		t.Errorf("signatures = %q, want %q", got, docs)
	}
}

// TestPlainWasmArtifactIsRefusedWithTheFix pushes a module as a plain
// CNCF Wasm artifact, the way oras or wkg push one — no Anvil annotations
// — and pulls it: the refusal names every missing annotation and the
// command that writes them.
func TestPlainWasmArtifactIsRefusedWithTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref, err := oci.ParseRef("oci://"+newRegistry(t, false)+"/team-a/plain:1.0", true)
	if err != nil {
		t.Fatal(err)
	}
	c := &oci.Client{}
	repo, err := c.Repository(ref)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := oras.PushBytes(ctx, repo, oci.WasmLayer, []byte("\x00asm\x01\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := oras.PushBytes(ctx, repo, oci.WasmConfig, []byte(`{"architecture":"wasm","os":"wasip1","layerDigests":["`+layer.Digest.String()+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{ConfigDescriptor: &cfg, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, desc, ref.Tag); err != nil {
		t.Fatal(err)
	}
	_, err = c.FetchPlugin(ctx, ref)
	if err == nil {
		t.Fatal("a plain Wasm artifact was accepted without its descriptor annotations")
	}
	for _, want := range []string{oci.AnnotationName, oci.AnnotationVersion, oci.AnnotationABI, oci.AnnotationKinds,
		oci.AnnotationCapabilities, "anvil-host plugin push MODULE.wasm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
}

// TestRegistryThatStalls pulls from a registry that stops sending the
// module's blob partway: the pull fails within StallAfter, naming the
// plugin and the stall, instead of hanging the run. The same registry
// sending slowly, but steadily, is read to the end.
func TestRegistryThatStalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var stallBlobs, paceBlobs atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") || !stallBlobs.Load() && !paceBlobs.Load() {
			reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		third := len(body) / 3
		w.Write(body[:third]) //nolint:errcheck
		w.(http.Flusher).Flush()
		if stallBlobs.Load() {
			<-r.Context().Done() // holds the rest until the client goes
			return
		}
		for _, part := range [][]byte{body[third : 2*third], body[2*third:]} {
			time.Sleep(1200 * time.Millisecond) // the link's pace: the subject of the test
			w.Write(part)                       //nolint:errcheck
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	ref, err := oci.ParseRef("oci://"+strings.TrimPrefix(srv.URL, "http://")+"/team-a/kw:1.0", true)
	if err != nil {
		t.Fatal(err)
	}
	c := &oci.Client{StallAfter: 2 * time.Second}
	module := []byte("\x00asm\x01\x00\x00\x00 pretend module")
	if _, err := c.Push(ctx, ref, oci.Artifact{Module: module, Transport: oci.TransportWasm, Summary: judgeSummary}); err != nil {
		t.Fatal(err)
	}
	f, err := c.FetchPlugin(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	stallBlobs.Store(true)
	_, err = c.FetchLayer(ctx, ref, f.Plugin, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "nothing sent or received for 2s") || !strings.Contains(err.Error(), f.Manifest.Digest.String()) {
		t.Errorf("FetchLayer from a stalled registry: %v; want an error naming the plugin and the stall", err)
	}
	stallBlobs.Store(false)
	paceBlobs.Store(true)
	// Three parts 1.2 s apart, 2.4 s in all, each within 2 s of the
	// last: the slow blob arrives whole.
	if got, err := c.FetchLayer(ctx, ref, f.Plugin, 1<<20); err != nil || string(got) != string(module) {
		t.Errorf("FetchLayer from a slow registry = %q, %v", got, err)
	}
}
