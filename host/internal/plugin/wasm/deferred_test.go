package wasm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/internal/testkit"
)

// heldCompiles holds every compile of a Runtime until released.
type heldCompiles struct {
	release chan struct{}
	once    sync.Once
}

func holdCompiles(t *testing.T) *heldCompiles {
	h := &heldCompiles{release: make(chan struct{})}
	t.Cleanup(h.open)
	return h
}

func (h *heldCompiles) open() { h.once.Do(func() { close(h.release) }) }

func (h *heldCompiles) hold(ctx context.Context, _ string) error {
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestLoadDeferredDescribesBeforeCompiling: with the compile held, a cold
// load still returns the module's descriptor (read in the interpreter);
// calls wait for the compiled module and then run on it; the descriptor is
// remembered beside the compile cache. A later load of the same bytes
// announces the remembered descriptor, and one that the compiled module
// contradicts (here: tampered with) refuses the plugin, tells onFail before
// any call can see the refusal, and forgets the remembered descriptor.
func TestLoadDeferredDescribesBeforeCompiling(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	ctx := context.Background()
	dir := t.TempDir()
	path, digest := plugintest.GuestPath("textcheck"), plugintest.GuestDigest(t, "textcheck")

	held := holdCompiles(t)
	rt, err := NewRuntime(ctx, RuntimeOptions{CacheDir: dir, BeforeCompile: held.hold})
	if err != nil {
		t.Fatal(err)
	}
	d, err := rt.LoadDeferred(ctx, path, digest, transport.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
		t.Fatal("settled while its compile was held")
	default:
	}
	if !hasKind(d.Info().Descriptor, "exact_match") || d.Info().Descriptor.Name != "textcheck" {
		t.Fatalf("descriptor before compiling: %+v", d.Info().Descriptor)
	}
	held.open()
	res, err := d.Measure(ctx, nil, &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
		Case: abi.TestCase{ID: "c", ActualOutput: "Paris", ExpectedOutput: "Paris"}})
	if err != nil || res.Score == nil || *res.Score != 1 {
		t.Fatalf("measure after the compile: %+v, %v", res, err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	memo := filepath.Join(dir, "anvil-descriptors", strings.TrimPrefix(digest, "sha256:")+".json")
	raw, err := os.ReadFile(memo)
	if err != nil {
		t.Fatalf("descriptor not remembered: %v", err)
	}

	// Tamper with the remembered descriptor: still a valid one, but not
	// what the module says.
	tampered := bytes.Replace(raw, []byte(`"version":"`), []byte(`"version":"9.9.9-`), 1)
	if bytes.Equal(tampered, raw) {
		t.Fatalf("no version in %s", raw)
	}
	if err := os.WriteFile(memo, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	held2 := holdCompiles(t)
	rt2, err := NewRuntime(ctx, RuntimeOptions{CacheDir: dir, BeforeCompile: held2.hold})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close(ctx)
	var d2 *Deferred
	told := make(chan error, 1)
	d2, err = rt2.LoadDeferred(ctx, path, digest, transport.Options{}, func(err error) {
		select {
		case <-d2.Done():
			t.Error("onFail called after calls could see the refusal")
		default:
		}
		told <- err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close(ctx)
	if v := d2.Info().Descriptor.Version; !strings.HasPrefix(v, "9.9.9-") {
		t.Fatalf("version %q: the remembered descriptor was not used", v)
	}
	held2.open()
	_, err = d2.Measure(ctx, nil, &abi.MeasureRequest{Kind: "exact_match", Metric: "m", Case: abi.TestCase{ID: "c"}})
	if err == nil || !strings.Contains(err.Error(), "describes itself differently") || !strings.Contains(err.Error(), digest[:len("sha256:")+12]) {
		t.Fatalf("want a refusal naming the digest, got %v", err)
	}
	if e := <-told; e == nil || e.Error() != err.Error() {
		t.Errorf("onFail got %v, calls get %v", e, err)
	}
	if _, err := os.Stat(memo); !os.IsNotExist(err) {
		t.Errorf("the contradicted descriptor is still remembered: %v", err)
	}
}

func hasKind(d abi.Descriptor, name string) bool {
	_, ok := d.KindOf(name, abi.RoleMetric)
	return ok
}

// TestCloseWaitsForAnAbandonedCompile: closing a Deferred whose compile
// runs abandons the compile, and the Runtime's Close returns only once it
// has stopped — wazero compiles through the compilation cache, and closing
// the cache under a running compile crashed the process.
func TestCloseWaitsForAnAbandonedCompile(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{})
	var once sync.Once
	rt, err := NewRuntime(ctx, RuntimeOptions{CacheDir: t.TempDir(), BeforeCompile: func(context.Context, string) error {
		once.Do(func() { close(started) })
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := rt.LoadDeferred(ctx, plugintest.GuestPath("textcheck"), plugintest.GuestDigest(t, "textcheck"), transport.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started // the compile is under way (cold: it takes seconds)
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(ctx); err == nil {
		t.Error("a plugin closed before its compile ended is ready")
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.compiling.Load(); n != 0 {
		t.Fatalf("Runtime.Close returned with %d compile(s) still running", n)
	}
}
