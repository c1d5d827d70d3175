package wasmmeter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// smithVersion is the wasm-tools release scripts/ci-deps-wasm-tools
// installs. wasm-smith maps input bytes to a module differently from one
// release to the next, so a seed number names a module only together with
// it; the crashers keep the module itself.
const smithVersion = "1.263.0"

// smith generates modules with `wasm-tools smith`.
type smith struct {
	bin     string
	version string // what the binary says, e.g. "wasm-tools 1.263.0"
}

// findSmith finds wasm-tools on PATH or where cargo installs it, or says why
// there is none.
func findSmith() (*smith, error) {
	var tried []string
	candidates := []string{}
	if p, err := exec.LookPath("wasm-tools"); err == nil {
		candidates = append(candidates, p)
	}
	cargoHome := os.Getenv("CARGO_HOME")
	if cargoHome == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cargoHome = filepath.Join(home, ".cargo")
		}
	}
	if bin := filepath.Join(cargoHome, "bin", "wasm-tools"); cargoHome != "" && fileExists(bin) {
		candidates = append(candidates, bin)
	}
	for _, bin := range candidates {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", bin, err))
			continue
		}
		return &smith{bin: bin, version: strings.TrimSpace(string(out))}, nil
	}
	if len(tried) == 0 {
		return nil, errors.New("wasm-tools is neither on PATH nor in $CARGO_HOME/bin (scripts/ci-deps-wasm-tools installs it)")
	}
	return nil, fmt.Errorf("no working wasm-tools (scripts/ci-deps-wasm-tools installs it): %s", strings.Join(tried, "; "))
}

// smithFlags configures wasm-smith to what wazero's default configuration
// (api.CoreFeaturesV2) accepts, with no imports (the instrumented module's
// only imports are then the meter's), everything exported (so the
// differential sees every function, global and memory), and memories and
// tables with a maximum well below the 64 MiB budget the test instruments
// with: a grow that succeeds on the original must succeed on the
// instrumented module, and a table without a maximum would let table.grow
// allocate gigabytes in the test process.
//
// Per seed it also varies what wasm-smith offers beyond that:
// disallow-traps (guarded loads and divisions, so a call gets further
// before it stops), ensure-termination (a fuel global of wasm-smith's own,
// so the whole module finishes and every call is compared), padded LEB128
// numbers (the rewriter reads and re-encodes every immediate), custom
// sections (names the rewriter must keep in step), and bodies of up to
// 1,000 instructions (deeper nesting, longer stretches between checks).
func smithFlags(seed uint64) []string {
	flags := []string{
		"--export-everything", "true",
		"--max-imports", "0",
		"--allow-start-export", "true",
		// Enabled in api.CoreFeaturesV2.
		"--bulk-memory-enabled", "true",
		"--multi-value-enabled", "true",
		"--reference-types-enabled", "true",
		"--saturating-float-to-int-enabled", "true",
		"--sign-extension-ops-enabled", "true",
		"--simd-enabled", "true",
		// Not in api.CoreFeaturesV2 (several are on by default in wasm-smith).
		"--threads-enabled", "false",
		"--shared-everything-threads-enabled", "false",
		"--tail-call-enabled", "false",
		"--exceptions-enabled", "false",
		"--memory64-enabled", "false",
		"--gc-enabled", "false",
		"--relaxed-simd-enabled", "false",
		"--custom-descriptors-enabled", "false",
		"--custom-page-sizes-enabled", "false",
		"--compact-imports-enabled", "false",
		"--extended-const-enabled", "false",
		"--wide-arithmetic-enabled", "false",
		"--max-memories", "1",
		"--max-tables", "4",
		// Bounded memory and tables.
		"--max-memory32-bytes", strconv.Itoa(16 << 20),
		"--memory-max-size-required", "true",
		"--max-table-elements", "10000",
		"--table-max-size-required", "true",
		// The two sides run different machine code; NaN payloads could
		// differ between them without either being wrong.
		"--canonicalize-nans", "true",
	}
	r := rand.New(rand.NewPCG(seed, 0x666c616773))
	if r.IntN(3) == 0 {
		flags = append(flags, "--disallow-traps", "true")
	}
	if r.IntN(4) == 0 {
		flags = append(flags, "--ensure-termination", "--fuel", strconv.Itoa(1000+r.IntN(1_000_000)))
	}
	if r.IntN(4) == 0 {
		flags = append(flags, "--min-uleb-size", strconv.Itoa(2+r.IntN(4)))
	}
	if r.IntN(4) == 0 {
		flags = append(flags, "--generate-custom-sections", "true")
	}
	if r.IntN(4) == 0 {
		flags = append(flags, "--max-instructions", "1000")
	}
	return flags
}

// seedInput is the input wasm-smith reads for a seed: between 64 bytes and
// 8 KiB (longer inputs make larger modules) of a PCG stream.
func seedInput(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x736d697468))
	b := make([]byte, 64+r.IntN(8<<10-64))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// errNoModule is wasm-smith's exit code 2: it could not make a module from
// these bytes (rare; the seed is skipped).
var errNoModule = errors.New("wasm-smith made no module from this seed")

// generate runs wasm-smith on a seed's input. wasm-smith makes one module
// per process (it has no batch mode); a spawn costs about 15 ms here, far
// below compiling the module twice.
func (s *smith) generate(ctx context.Context, seed uint64) ([]byte, []string, error) {
	flags := smithFlags(seed)
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"smith"}, flags...)...)
	cmd.Stdin = bytes.NewReader(seedInput(seed))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 2 {
			return nil, flags, errNoModule
		}
		return nil, flags, fmt.Errorf("running wasm-tools smith for seed %d: %w: %s", seed, err, strings.TrimSpace(stderr.String()))
	}
	if !bytes.HasPrefix(stdout.Bytes(), []byte("\x00asm")) {
		return nil, flags, fmt.Errorf("wasm-tools smith for seed %d wrote %d bytes that are not a binary module", seed, stdout.Len())
	}
	return stdout.Bytes(), flags, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
