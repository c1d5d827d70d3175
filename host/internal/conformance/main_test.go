package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin"
)

// The plugins the kit is tested on, built from source by TestMain: the
// first-party modules and the textcheck example must pass, the zoo's
// misbehaving guests must not.
var wasmSources = map[string]string{
	"textcheck":    "../../../examples/plugins/textcheck/wasm",
	"geval":        "../../../plugins/geval/wasm",
	"dag":          "../../../plugins/dag/wasm",
	"rag":          "../../../plugins/rag/wasm",
	"assert":       "../../../plugins/assert/wasm",
	"conversation": "../../../plugins/conversation/wasm",
	"content":      "../../../plugins/content/wasm",
	"agent":        "../../../plugins/agent/wasm",
	"similarity":   "../../../plugins/similarity/wasm",
	"garbage":      "../plugin/testdata/zoo/garbage",
	"dupdesc":      "../plugin/testdata/zoo/dupdesc",
	"hostile":      "../plugin/testdata/zoo/hostile",
	"unasked":      "../plugin/testdata/zoo/unasked",
}

var buildDir string

func TestMain(m *testing.M) {
	plugin.MaybeRunTrampoline() // this binary is the sandbox trampoline of the process plugins it starts
	dir, err := os.MkdirTemp("", "anvil-conformance-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building test plugins:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles every test plugin, two at a time.
func build(dir string) error {
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	run := func(name string, cmd *exec.Cmd) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		if out, err := cmd.CombinedOutput(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v\n%s", name, err, out))
			mu.Unlock()
		}
	}
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-race") && !strings.HasPrefix(f, "--race") {
			flags = append(flags, f)
		}
	}
	for name, src := range wasmSources {
		cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", filepath.Join(dir, name+".wasm"), src)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="+strings.Join(flags, " "))
		wg.Add(1)
		go run(name, cmd)
	}
	wg.Add(1)
	go run("textcheck-native", exec.Command("go", "build", "-o", filepath.Join(dir, "textcheck-native"), "../../../examples/plugins/textcheck/native"))
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

func wasmPath(name string) string { return filepath.Join(buildDir, name+".wasm") }

// cacheDir is the compilation cache the tests share across runs.
func cacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "anvil", "wazero-test")
	}
	return ""
}
