package wasmmeter

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentanvil/anvil/internal/testkit"
)

// buildGoProgram builds testdata/goguest, a wasip1 command, or skips.
func buildGoProgram(t testing.TB) []byte {
	t.Helper()
	testkit.Long(t, "builds a Go program")
	out := filepath.Join(t.TempDir(), "goguest.wasm")
	cmd := testkit.GoWasip1(t.Context(), "build", "-trimpath", "-o", out, "./testdata/goguest")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the Go program: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runCommand runs a wasip1 command with wazero's deterministic clocks and
// randomness and returns its output and exit code.
func runCommand(t testing.TB, wasm []byte, h *meter, args ...string) (string, uint32) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if h != nil {
		err := h.serve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
	}
	var stdout bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stdout).
		WithArgs(append([]string{"goguest"}, args...)...)
	_, err := r.InstantiateWithConfig(ctx, wasm, cfg)
	code := uint32(0)
	if exit, ok := err.(*sys.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		return "error: " + err.Error(), 0
	}
	return stdout.String(), code
}

// A real Go program (scheduler, garbage collector, goroutines) prints the
// same and exits the same when metered, under many small slices, and uses
// the same fuel each time.
func TestGoProgramBehavesTheSame(t *testing.T) {
	testkit.Long(t, "builds a Go program")
	wasm := buildGoProgram(t)
	metered := mustInstrument(t, wasm, Options{MemoryBudget: 1 << 30})
	for _, args := range [][]string{nil, {"exit3"}} {
		want, wantCode := runCommand(t, wasm, nil, args...)
		if len(want) != 65 {
			t.Fatalf("the original printed %q", want)
		}
		var used []int64
		for _, grant := range []int64{1 << 50, 10_000, 10_000, 17_389} {
			// The command runs as _start, called through its export wrapper.
			h := &meter{grant: grant}
			got, gotCode := runCommand(t, metered, h, args...)
			if got != want || gotCode != wantCode {
				t.Errorf("grant %d: metered printed %q (exit %d), original %q (exit %d)", grant, got, gotCode, want, wantCode)
			}
			if grant < 1<<20 && h.yields < 100 {
				t.Errorf("only %d yields with slices of %d units", h.yields, grant)
			}
			used = append(used, h.used)
		}
		// A Go command ends in proc_exit, so leave never reports the last
		// slice: the fuel seen is what the yields reported, which is the same
		// for the same slices and differs by less than a slice otherwise.
		if used[1] != used[2] {
			t.Errorf("fuel used differs between identical runs: %v", used)
		}
		if d := used[1] - used[3]; d < -17_389 || d > 17_389 {
			t.Errorf("fuel used differs by more than a slice: %v", used)
		}
	}
}

// BenchmarkGoProgram is the run-time cost of metering on a Go program
// (compilation included, as wazero compiles at instantiation here).
func BenchmarkGoProgram(b *testing.B) {
	wasm := buildGoProgram(b)
	metered := mustInstrument(b, wasm, Options{MemoryBudget: 1 << 30})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		wasm []byte
		h    *meter
	}{{"original", wasm, nil}, {"metered", metered, &meter{grant: 1 << 20}}} {
		b.Run(c.name, func(b *testing.B) {
			r := wazero.NewRuntime(ctx)
			defer r.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, r)
			if c.h != nil {
				err := c.h.serve(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
			}
			compiled, err := r.CompileModule(ctx, c.wasm)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				_, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
				if exit, ok := err.(*sys.ExitError); err != nil && (!ok || exit.ExitCode() != 0) {
					b.Fatal(err)
				}
			}
		})
	}
}
