package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/internal/testkit"
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

// build compiles every test plugin, two at a time, the Wasm ones as
// scripts/build-plugins does.
func build(dir string) error {
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	run := func(name string, build func() ([]byte, error)) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		if out, err := build(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v\n%s", name, err, out))
			mu.Unlock()
		}
	}
	for name, src := range wasmSources {
		wg.Add(1)
		go run(name, func() ([]byte, error) {
			_, err := testkit.BuildGuest(context.Background(), src, filepath.Join(dir, name+".wasm"))
			return nil, err
		})
	}
	wg.Add(1)
	go run("textcheck-native", exec.Command("go", "build", "-o", filepath.Join(dir, "textcheck-native"), "../../../examples/plugins/textcheck/native").CombinedOutput)
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
