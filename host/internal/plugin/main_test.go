package plugin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// The guests the tests run, built from source by TestMain: nothing
// prebuilt is committed, so a clean clone tests with plain `go test`.
var guestSources = map[string]string{
	"textcheck":  "../../../examples/plugins/textcheck/wasm",
	"geval":      "../../../plugins/geval/wasm",
	"dag":        "../../../plugins/dag/wasm",
	"rag":        "../../../plugins/rag/wasm",
	"content":    "../../../plugins/content/wasm",
	"agent":      "../../../plugins/agent/wasm",
	"similarity": "../../../plugins/similarity/wasm",
	"hostile":    "./testdata/zoo/hostile",
	"judge":      "./testdata/zoo/judge",
	"wrongabi":   "./testdata/zoo/wrongabi",
	"nomarker":   "./testdata/zoo/nomarker",
	"nodescribe": "./testdata/zoo/nodescribe",
	"nomeasure":  "./testdata/zoo/nomeasure",
	"baddesc":    "./testdata/zoo/baddesc",
	"garbage":    "./testdata/zoo/garbage",
	"dupdesc":    "./testdata/zoo/dupdesc",
	"unasked":    "./testdata/zoo/unasked",
	"foreign":    "./testdata/zoo/foreign",
	"badimport":  "./testdata/zoo/badimport",
	"badio":      "./testdata/zoo/badio",
	"oldio":      "./testdata/zoo/oldio",
	"oldcase":    "./testdata/zoo/oldcase",
	"badiosig":   "./testdata/zoo/badiosig",
}

// nativeSource is the process-transport guest: one binary, hard-linked
// under each of nativeNames (it is whichever plugin its name says).
const nativeSource = "./testdata/native"

var nativeNames = []string{"textcheck", "geval", "dag", "rag", "content", "agent", "similarity", "hostile", "canary", "abi2", "nocookie", "descmajor",
	"unasked", "dupdesc", "refschema"}

var (
	guestDir  string   // where TestMain put the .wasm files
	nativeDir string   // where TestMain put the native guest and its names
	testRT    *Runtime // shared by the tests, as a process would share it
)

func TestMain(m *testing.M) {
	MaybeRunTrampoline() // this binary is the sandbox trampoline of the process plugins it starts
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "anvil-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	guestDir = filepath.Join(dir, "wasm")
	nativeDir = filepath.Join(dir, "native")
	if err := buildGuests(guestDir, nativeDir); err != nil {
		fmt.Fprintln(os.Stderr, "building test guests:", err)
		return 1
	}
	ctx := context.Background()
	testRT, err = NewRuntime(ctx, RuntimeOptions{CacheDir: testCacheDir(dir)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testRT.Close(ctx)
	return m.Run()
}

// testCacheDir is where the tests keep compiled guests. Like Go's build
// cache it outlives the run: compiling the guests takes seconds, loading
// them from the cache milliseconds, and entries are keyed by module
// sha256, wazero version and CPU, so a stale entry cannot be used.
// ANVIL_TEST_WAZERO_CACHE overrides it; "off" uses a fresh directory.
func testCacheDir(tmp string) string {
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

// buildGuests compiles every guest with the go command that runs the
// tests, two at a time (CI has two cores; Go's build cache makes reruns
// cheap): the Wasm guests into out, the native guest into nativeOut.
func buildGuests(out, nativeOut string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	run := func(name string, cmd *exec.Cmd) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		if b, err := cmd.CombinedOutput(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v\n%s", name, err, b))
			mu.Unlock()
		}
	}
	// The process-transport guest: one binary for every native test.
	wg.Add(1)
	go run("native", nativeBuild(goCmd, nativeOut))
	for name, src := range guestSources {
		cmd := exec.Command(goCmd, "build", "-trimpath", "-buildmode=c-shared", "-o", filepath.Join(out, name+".wasm"), src)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="+guestGoflags())
		wg.Add(1)
		go run(name, cmd)
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
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
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goCmd, append(args, nativeSource)...)
	cmd.Env = append(os.Environ(), "GOFLAGS="+guestGoflags())
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

// guestGoflags is GOFLAGS without -race: a CI that sets GOFLAGS=-race
// means the host, and wasip1 has no race detector.
func guestGoflags() string {
	var keep []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" && f != "--race" && !strings.HasPrefix(f, "-race=") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// guestPath is where the named guest's module was built.
func guestPath(name string) string { return filepath.Join(guestDir, name+".wasm") }

// guestDigest is the named guest's sha256, as an operator would pin it.
func guestDigest(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(guestPath(name))
	if err != nil {
		t.Fatal(err)
	}
	return digestOf(b)
}

// nativePath is the native guest under the given name.
func nativePath(name string) string { return filepath.Join(nativeDir, name) }

var nativeSum struct {
	once   sync.Once
	digest string
	err    error
}

// nativeDigest is the native guest's sha256 (the same under every name).
func nativeDigest(t testing.TB) string {
	t.Helper()
	nativeSum.once.Do(func() { nativeSum.digest, nativeSum.err = fileDigest(filepath.Join(nativeDir, "native")) })
	if nativeSum.err != nil {
		t.Fatal(nativeSum.err)
	}
	return nativeSum.digest
}

// loadProcess starts a native guest through the shared runtime and closes
// it after the test.
func loadProcess(t testing.TB, name string, opts Options) Plugin {
	t.Helper()
	p, err := testRT.LoadProcess(context.Background(), nativePath(name), nativeDigest(t), opts)
	if err != nil {
		t.Fatalf("load process %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return p
}

// load loads a guest through the shared runtime and closes it after the test.
func load(t testing.TB, name string, opts Options) Plugin {
	t.Helper()
	p, err := testRT.Load(context.Background(), guestPath(name), guestDigest(t, name), opts)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return p
}

// fakeServices is the host side of judge calls in these tests: the real
// judge layer is another package. It answers each request with the text
// it was asked, and counts.
type fakeServices struct {
	tokensPerCall int
	calls         atomic.Int64
	mu            sync.Mutex
	logs          []abi.LogRecord
	logIDs        []string
}

func (s *fakeServices) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	s.calls.Add(int64(len(reqs)))
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		var parts []string
		for _, m := range r.Messages {
			parts = append(parts, m.Role+":"+m.Content)
		}
		out[i] = abi.JudgeResponse{
			Content: "echo(" + strings.Join(parts, ",") + ")",
			Usage:   abi.Usage{Model: "fake", InputTokens: s.tokensPerCall / 2, OutputTokens: s.tokensPerCall - s.tokensPerCall/2},
		}
	}
	return out
}

func (s *fakeServices) Log(_ context.Context, pluginID string, rec abi.LogRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, rec)
	s.logIDs = append(s.logIDs, pluginID)
}
