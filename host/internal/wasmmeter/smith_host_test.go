package wasmmeter

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// crasherDir holds the modules the generated-module test found something
// wrong with; TestSmithCrashers replays each on every run.
const crasherDir = "testdata/smith-crashers"

// saveCrasher writes a module to crasherDir as <sha256>.wasm, with a
// <sha256>.txt beside it saying where it came from and what was found.
func saveCrasher(wasm []byte, note string) (string, error) {
	sum := sha256.Sum256(wasm)
	base := filepath.Join(crasherDir, hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(crasherDir, 0o755); err != nil {
		return "", fmt.Errorf("saving a crasher: %w", err)
	}
	if err := os.WriteFile(base+".wasm", wasm, 0o644); err != nil {
		return "", fmt.Errorf("saving a crasher: %w", err)
	}
	if err := os.WriteFile(base+".txt", []byte(note), 0o644); err != nil {
		return "", fmt.Errorf("saving a crasher's note: %w", err)
	}
	return base + ".wasm", nil
}

// saveInFlight saves a module beside the crashers, as <sha256>.inflight
// (and .inflight.txt), before it runs, so that a run the test process does
// not survive (a Go fatal error, the kernel's OOM killer, a hang that even
// the watchdog cannot end because a stop-the-world waits on a thread in
// guest code, go test's own timeout) still leaves it behind;
// scripts/fuzz-wasm turns such a leftover into a crasher. TestSmithCrashers
// does not replay .inflight files, so a run going on beside it does not
// change what it replays. The returned func removes them again.
func saveInFlight(wasm []byte, note string) (clear func(), err error) {
	sum := sha256.Sum256(wasm)
	base := filepath.Join(crasherDir, hex.EncodeToString(sum[:])) + ".inflight"
	if err := os.MkdirAll(crasherDir, 0o755); err != nil {
		return nil, fmt.Errorf("saving the module in flight: %w", err)
	}
	if err := os.WriteFile(base, wasm, 0o644); err != nil {
		return nil, fmt.Errorf("saving the module in flight: %w", err)
	}
	if err := os.WriteFile(base+".txt", []byte(note), 0o644); err != nil {
		return nil, fmt.Errorf("saving the module in flight: %w", err)
	}
	return func() {
		os.Remove(base)
		os.Remove(base + ".txt")
	}, nil
}

// hostUsage is what a run of guest code could leak in the host process.
type hostUsage struct {
	goroutines int
	fds        int   // open file descriptors
	rssKiB     int64 // resident set, after returning freed memory to the OS
}

func (u hostUsage) String() string {
	return fmt.Sprintf("%d goroutines, %d open files, %d MiB resident", u.goroutines, u.fds, u.rssKiB>>10)
}

// readUsage measures the process. Linux only (/proc); elsewhere fds and
// rssKiB are -1 and are not compared.
func readUsage() hostUsage {
	debug.FreeOSMemory()
	u := hostUsage{goroutines: runtime.NumGoroutine(), fds: -1, rssKiB: -1}
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.fds = len(entries) - 1 // ReadDir's own descriptor
	}
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					u.rssKiB = n
				}
			}
		}
	}
	return u
}

// rssGrowthBound is how much larger the resident set may be after a run
// than before it. A module's memory is at most 16 MiB and its tables
// 10,000 entries, and a stack overflow grows a call stack to wazero's
// ceiling (400 MB) before it traps; all of it belongs to instances closed
// after each module. What stays is the Go heap's slack and the allocator's
// caches.
const rssGrowthBound = 768 << 10 // KiB

// checkNoLeaks compares the process with a baseline taken before the run.
// Goroutines that a closed call leaves (close-on-context-done's watchers)
// end on their own shortly after; the wait for them is bounded.
func checkNoLeaks(before hostUsage) (hostUsage, error) {
	deadline := time.Now().Add(10 * time.Second)
	after := readUsage()
	for after.goroutines > before.goroutines && time.Now().Before(deadline) {
		runtime.Gosched()
		after.goroutines = runtime.NumGoroutine()
	}
	after = readUsage()
	var problems []string
	if after.goroutines > before.goroutines {
		var stacks bytes.Buffer
		buf := make([]byte, 1<<20)
		stacks.Write(buf[:runtime.Stack(buf, true)])
		problems = append(problems, fmt.Sprintf("goroutines: %d before, %d after:\n%s", before.goroutines, after.goroutines, stacks.String()))
	}
	if before.fds >= 0 && after.fds > before.fds {
		problems = append(problems, fmt.Sprintf("open files: %d before, %d after", before.fds, after.fds))
	}
	if before.rssKiB >= 0 && after.rssKiB-before.rssKiB > rssGrowthBound {
		problems = append(problems, fmt.Sprintf("resident set: %d MiB before, %d MiB after (bound: +%d MiB)", before.rssKiB>>10, after.rssKiB>>10, rssGrowthBound>>10))
	}
	if len(problems) > 0 {
		return after, fmt.Errorf("the host leaked: %s", strings.Join(problems, "; "))
	}
	return after, nil
}
