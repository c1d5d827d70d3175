// Package plugintest is the plugin packages' shared test harness: it
// builds the test guests from source (the Wasm guests and the one native
// process guest), says where they are and what digest to pin, and
// provides the fake host Services the tests judge and log through, and
// the checks more than one transport runs (RunHostile, Hold, AllocBudget).
//
// It imports no transport, so the tests of every plugin package
// (transport, wasm, process, inproc and the parent's cross-transport
// tests) can use it; the checks take the transport's Services as a type
// parameter. Each package's TestMain calls Main or MainRuntime, and loads
// guests through its own runtime (Loaded closes them). Nothing prebuilt
// is committed: a clean clone tests with plain `go test`.
package plugintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/internal/testkit"
)

// The Wasm guests the tests run, by name: paths relative to this
// package's directory.
var guestSources = map[string]string{
	"textcheck":  "examples/plugins/textcheck/wasm",
	"geval":      "plugins/geval/wasm",
	"dag":        "plugins/dag/wasm",
	"rag":        "plugins/rag/wasm",
	"content":    "plugins/content/wasm",
	"agent":      "plugins/agent/wasm",
	"similarity": "plugins/similarity/wasm",
	"hostile":    "zoo/hostile",
	"judge":      "zoo/judge",
	"wrongabi":   "zoo/wrongabi",
	"nomarker":   "zoo/nomarker",
	"nodescribe": "zoo/nodescribe",
	"nomeasure":  "zoo/nomeasure",
	"baddesc":    "zoo/baddesc",
	"garbage":    "zoo/garbage",
	"dupdesc":    "zoo/dupdesc",
	"unasked":    "zoo/unasked",
	"foreign":    "zoo/foreign",
	"badimport":  "zoo/badimport",
	"badio":      "zoo/badio",
	"oldio":      "zoo/oldio",
	"oldcase":    "zoo/oldcase",
	"badiosig":   "zoo/badiosig",
}

// nativeNames are the names the process-transport guest is hard-linked
// under: one binary, which is whichever plugin its name says.
var nativeNames = []string{"textcheck", "geval", "dag", "rag", "content", "agent", "similarity", "hostile", "canary", "abi2", "nocookie", "descmajor",
	"unasked", "dupdesc", "refschema"}

// Need says which guests a test binary builds.
type Need struct {
	Wasm   bool // every Wasm guest
	Native bool // the process-transport guest under each of its names
}

var (
	guestDir  string // where Main put the .wasm files
	nativeDir string // where Main put the native guest and its names
)

// Main builds the guests need asks for, runs m's tests and removes the
// guests. It returns the exit code for os.Exit.
func Main(m *testing.M, need Need) int {
	return withGuests(need, func(string) int { return m.Run() })
}

// withGuests builds the guests need asks for into a temporary directory
// and runs run with a directory for a compile cache (see CacheDir), then
// removes the guests. It returns the exit code for os.Exit.
func withGuests(need Need, run func(cacheDir string) int) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "anvil-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	guestDir = filepath.Join(dir, "wasm")
	nativeDir = filepath.Join(dir, "native")
	if err := buildGuests(need, guestDir, nativeDir); err != nil {
		fmt.Fprintln(os.Stderr, "building test guests:", err)
		return 1
	}
	return run(CacheDir(dir))
}

// CacheDir is where the tests keep compiled guests. Like Go's build
// cache it outlives the run: compiling the guests takes seconds, loading
// them from the cache milliseconds, and entries are keyed by module
// sha256, wazero version and CPU, so a stale entry cannot be used.
// ANVIL_TEST_WAZERO_CACHE overrides it; "off" uses a fresh directory
// under tmp.
func CacheDir(tmp string) string {
	switch d := os.Getenv("ANVIL_TEST_WAZERO_CACHE"); d {
	case "off":
		return filepath.Join(tmp, "cache")
	case "":
		if uc, err := os.UserCacheDir(); err == nil {
			return filepath.Join(uc, "anvil", "wazero-test")
		}
		return filepath.Join(tmp, "cache")
	default:
		return d
	}
}

// Dir is this package's source directory: the guests' sources are found
// from it, whichever package's tests run.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// repoDir is the module's root.
func repoDir() string { return filepath.Join(Dir(), "..", "..", "..", "..", "..") }

// sourceDir is where a guest's source is: the zoo and the native guest
// live in the parent plugin package's testdata, the first-party kinds
// in the repository.
func sourceDir(src string) string {
	if strings.HasPrefix(src, "zoo/") {
		return filepath.Join(Dir(), "..", "..", "testdata", src)
	}
	return filepath.Join(repoDir(), src)
}

// buildGuests compiles the guests need asks for with the go command that
// runs the tests, two at a time (CI has two cores; Go's build cache makes
// reruns cheap): the Wasm guests into out, as scripts/build-plugins does
// (testkit.BuildGuest), so their digests are the ones users pin; the
// native guest into nativeOut.
func buildGuests(need Need, out, nativeOut string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	run := func(build func() error) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		if err := build(); err != nil {
			mu.Lock()
			errs = append(errs, err.Error())
			mu.Unlock()
		}
	}
	if need.Native {
		wg.Add(1)
		go run(func() error {
			if b, err := nativeBuild(goCmd, nativeOut).CombinedOutput(); err != nil {
				return fmt.Errorf("native: %v\n%s", err, b)
			}
			return nil
		})
	}
	if need.Wasm {
		for name, src := range guestSources {
			wg.Add(1)
			go run(func() error {
				_, err := testkit.BuildGuest(context.Background(), sourceDir(src), filepath.Join(out, name+".wasm"))
				return err
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if !need.Native {
		return nil
	}
	return linkNative(nativeOut)
}

// nativeBuild builds the native guest for this machine with the flags
// the test binary was built with (under -race, -race too; no -trimpath):
// it then shares the test binary's compiled dependencies (gRPC,
// go-plugin, the kinds) in the build cache and only links, and a data
// race in the guest side of the transport is reported on its stderr,
// which the tests read.
func nativeBuild(goCmd, out string) *exec.Cmd {
	args := []string{"build", "-o", filepath.Join(out, "native")}
	if RaceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goCmd, append(args, "./native")...)
	cmd.Dir = filepath.Join(Dir(), "..", "..", "testdata")
	// GOFLAGS=-race meant the host; -race is added above only when the
	// test binary has it.
	cmd.Env = append(os.Environ(), "GOFLAGS="+testkit.GuestGoflags(os.Getenv("GOFLAGS")))
	return cmd
}

// linkNative gives the native guest each of its names.
func linkNative(dir string) error {
	for _, name := range nativeNames {
		if err := os.Link(filepath.Join(dir, "native"), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// GuestDir is where Main built the Wasm guests.
func GuestDir() string { return guestDir }

// NativeDir is where Main built the native guest and its names.
func NativeDir() string { return nativeDir }

// GuestPath is where the named Wasm guest's module was built.
func GuestPath(name string) string { return filepath.Join(guestDir, name+".wasm") }

// GuestDigest is the named Wasm guest's sha256, as an operator would pin it.
func GuestDigest(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(GuestPath(name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// NativePath is the native guest under the given name.
func NativePath(name string) string { return filepath.Join(nativeDir, name) }

var nativeSum struct {
	once   sync.Once
	digest string
	err    error
}

// NativeDigest is the native guest's sha256 (the same under every name).
func NativeDigest(t testing.TB) string {
	t.Helper()
	nativeSum.once.Do(func() {
		b, err := os.ReadFile(filepath.Join(nativeDir, "native"))
		sum := sha256.Sum256(b)
		nativeSum.digest, nativeSum.err = "sha256:"+hex.EncodeToString(sum[:]), err
	})
	if nativeSum.err != nil {
		t.Fatal(nativeSum.err)
	}
	return nativeSum.digest
}

// FakeServices is the host side of judge calls in these tests: the real
// judge layer is another package. It answers each request with the text
// it was asked, and counts.
type FakeServices struct {
	TokensPerCall int
	Calls         atomic.Int64
	Mu            sync.Mutex
	Logs          []abi.LogRecord
	LogIDs        []string
}

func (s *FakeServices) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	s.Calls.Add(int64(len(reqs)))
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		var parts []string
		for _, m := range r.Messages {
			parts = append(parts, m.Role+":"+m.Content)
		}
		out[i] = abi.JudgeResponse{
			Content: "echo(" + strings.Join(parts, ",") + ")",
			Usage:   abi.Usage{Model: "fake", InputTokens: s.TokensPerCall / 2, OutputTokens: s.TokensPerCall - s.TokensPerCall/2},
		}
	}
	return out
}

func (s *FakeServices) Log(_ context.Context, pluginID string, rec abi.LogRecord) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.Logs = append(s.Logs, rec)
	s.LogIDs = append(s.LogIDs, pluginID)
}

// MustJSON is v as JSON, for messages and comparisons.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// CannedJudge is Services whose judge gives every request the same
// weighted G-Eval reply, at once.
type CannedJudge struct{ resp abi.JudgeResponse }

// Judge answers every request with the canned reply.
func (s CannedJudge) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(reqs))
	for i := range out {
		out[i] = s.resp
	}
	return out
}

// Log drops the record.
func (CannedJudge) Log(context.Context, string, abi.LogRecord) {}

// NewCannedJudge answers with a weighted G-Eval score of 7.8.
func NewCannedJudge() CannedJudge {
	b := []byte(`{"reason":"The answer names the capital correctly, and the population figure is close enough.","score":8}`)
	return CannedJudge{abi.JudgeResponse{Content: string(b), JSON: b,
		Score: &abi.ScoreResult{Raw: 8, Value: 7.8, Mode: abi.ScoreWeighted,
			Candidates: []abi.ScoreCandidate{{Value: 7, Probability: 0.3}, {Value: 8, Probability: 0.6}, {Value: 9, Probability: 0.1}}},
		Usage: abi.Usage{Model: "judge-1", InputTokens: 420, OutputTokens: 31, USD: 0.0012}}}
}

// GevalBenchRequest is a prepared criteria metric's request for one case.
func GevalBenchRequest() *abi.MeasureRequest {
	return &abi.MeasureRequest{Kind: "geval", Metric: "correctness",
		Config:    json.RawMessage(`{"name":"Correctness","description":"Is the answer right?","criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output","expected_output"]}`),
		Prepared:  json.RawMessage(`{"steps":["Read the input and identify what is asked.","Compare the actual output with the expected output for factual agreement.","Penalise padding and unsupported claims.","Decide how fully the actual output answers the input."],"source":"generated"}`),
		Threshold: 0.5, JudgeModel: "judge-1",
		Case: abi.TestCase{ID: "case-000001",
			Input:          "What is the capital of France, and roughly how many people live there?",
			ActualOutput:   "Paris is the capital of France. About 2.1 million people live in the city proper, and over 12 million in its metropolitan area.",
			ExpectedOutput: "Paris; about 2 million (city), 12 million (metro).",
		}}
}

// BenchCase is the first case `bench/cmd/gencases` writes (≈ 1.1 KB of
// text, never matching), under the metric of bench/wasm.yaml: what
// `CONFIG=wasm bench/run.sh` sends per case, so the benchmark's cost per
// call is the Wasm share of that harness's cost per case.
var BenchCase = &abi.MeasureRequest{Kind: "exact_match", Metric: "exact",
	Config: []byte(`{"ignore_case":true,"trim":true}`), Threshold: 0.5,
	Case: abi.TestCase{ID: "case-000001",
		Input: "Can you explain how however into account but value capital endpoint deploy. Stable database refund contract partly " +
			"timeout season price 793 public or release engineer reduce carefully partly reduce to with?",
		ActualOutput: "Mountain field while explain rarely 960 cache threshold 357 shared weather other simple. Unless network document few " +
			"several stable recent term budget. By network after transfer migrate several for to simple. Market user climate pipeline " +
			"price each model quickly or until several. Server therefore 292 neither secure configure other under. Configure so price " +
			"population analyst stable increase release. Analyst third 554 database each but after unless result for 82. Small so " +
			"failure population service query season retry for. Small whereas about 127 early explain although failure. Balance never " +
			"weather increase 955 clause service.",
		ExpectedOutput: "But migrate small account but describe every record dataset 49 response user or compare. Small value section before " +
			"engineer token configure retry retry summary both document therefore budget.",
	}}

// HostileRequest is a measure request of the hostile guest, which does
// what cfg's behaviour names.
func HostileRequest(id string, cfg map[string]any) *abi.MeasureRequest {
	b, _ := json.Marshal(cfg)
	return &abi.MeasureRequest{Kind: "hostile", Metric: "zoo", Config: b, Case: abi.TestCase{ID: id, Input: "in-" + id}}
}

// RunCPUMeasured runs call b.N times, in parallel when par, and reports
// the process's CPU time (user+sys, GC included) per call: on a shared
// machine it moves far less than wall time.
func RunCPUMeasured(b *testing.B, par bool, call func()) {
	cpu0 := cputime.Process()
	defer func() { b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op") }()
	if par {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
		return
	}
	for b.Loop() {
		call()
	}
}

// EmbedServices is FakeServices that also embeds: each text's vector is
// {len(text), 1}; every request not all cached reports 7 input tokens.
type EmbedServices struct {
	FakeServices
	Embeds   atomic.Int64
	mu       sync.Mutex
	Texts    [][]string
	CacheHit bool
	Short    bool // answer one vector too few
}

// Embed answers req and records its texts.
func (s *EmbedServices) Embed(_ context.Context, req abi.EmbedRequest) abi.EmbedResult {
	s.Embeds.Add(1)
	s.mu.Lock()
	s.Texts = append(s.Texts, req.Texts)
	s.mu.Unlock()
	vs := make([][]float64, len(req.Texts))
	for i, t := range req.Texts {
		vs[i] = []float64{float64(len(t)), 1}
	}
	if s.Short {
		vs = vs[1:]
	}
	u := abi.Usage{Model: "emb", InputTokens: 7, Calls: 1, Attempts: 1}
	if s.CacheHit {
		u = abi.Usage{Model: "emb", CacheHit: true}
	}
	return abi.EmbedResult{Vectors: vs, Usage: u}
}

// FakeSecret is put in the host's environment: no guest may ever see it.
const FakeSecret = "sk-anvil-test-FAKE-0123456789abcdef"

// Allocated is how many bytes of Go heap f allocated, in this process,
// while it ran (runtime.MemStats.TotalAlloc). It is an upper bound on what
// the host copied: other goroutines allocate too, so bounds on it are
// generous.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BlockingServices holds every judge call until Release is closed, and
// says when the first one arrived: a way to know a guest is mid-call
// without sleeping.
type BlockingServices struct {
	Entered chan struct{}
	Release chan struct{}
	first   bool
}

// NewBlockingServices is ready to hold calls.
func NewBlockingServices() *BlockingServices {
	return &BlockingServices{Entered: make(chan struct{}), Release: make(chan struct{})}
}

// Judge holds the batch until Release is closed, then answers empty.
func (s *BlockingServices) Judge(ctx context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	if !s.first {
		s.first = true
		close(s.Entered)
	}
	<-s.Release
	return make([]abi.JudgeResponse, len(reqs))
}

// Log drops the record.
func (s *BlockingServices) Log(context.Context, string, abi.LogRecord) {}

// NamedRequest is a measure request a table names.
type NamedRequest struct {
	Name string
	Req  *abi.MeasureRequest
}

// ExactMatchRequests are the trivial metric calls (exact_match on short
// strings) whose allocations the transports' budgets count.
func ExactMatchRequests() []NamedRequest {
	return []NamedRequest{
		{"equal", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}}},
		{"different, with details", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c2", Input: "Capital of France?", ActualOutput: "Paris, France", ExpectedOutput: "Paris"}}},
	}
}

// AllocBudget fails t when call, after a warm-up run, allocates more than
// budget times a run; what names the call in the message.
func AllocBudget(t *testing.T, what string, budget int, call func()) {
	t.Helper()
	got := testing.AllocsPerRun(200, call)
	t.Logf("%.1f allocations per call (budget %d)", got, budget)
	if got > float64(budget) {
		t.Errorf("%s allocates %.1f times, over the budget of %d", what, got, budget)
	}
}
