// Command measure runs a command and reports its wall time, CPU time (user
// and system, from the child's rusage) and peak resident set size — a
// portable stand-in for `/usr/bin/time -v`. On Linux it also samples the
// command's /proc/PID/status (every -sample) for what the resident set is
// made of: anonymous memory (the Go heap, stacks, guest memories) against
// file pages (the binary's text and read-only data), see rss.go.
//
//	measure [-o stats.json] [-sample 50ms] -- anvil-host run ...
//
// The report goes to stderr as one line, and as JSON to -o when set. The
// command's stdin, stdout and stderr are passed through; measure exits with
// the command's exit code. SIGINT and SIGTERM are passed on to the command.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// Stats is what measure reports.
type Stats struct {
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"`
	WallSec  float64  `json:"wall_s"`
	// StartUnixNS is when the command was started (bench/startup.sh
	// subtracts it from the fake judge's first request).
	StartUnixNS int64   `json:"start_unix_ns"`
	UserSec     float64 `json:"user_s"`
	SysSec      float64 `json:"sys_s"`
	CPUSec      float64 `json:"cpu_s"`
	MaxRSSKiB   int64   `json:"max_rss_kib"`
	// The sampled peaks of each part of the resident set (Linux), and the
	// parts of the sample with the largest total.
	PeakAnonKiB  int64 `json:"peak_rss_anon_kib"`
	PeakFileKiB  int64 `json:"peak_rss_file_kib"`
	PeakShmemKiB int64 `json:"peak_rss_shmem_kib"`
	AtMaxAnonKiB int64 `json:"at_max_rss_anon_kib"`
	AtMaxFileKiB int64 `json:"at_max_rss_file_kib"`
	RSSSamples   int   `json:"rss_samples"`
}

func main() {
	out := flag.String("o", "", "also write the stats as JSON to this file")
	every := flag.Duration("sample", 50*time.Millisecond, "how often to sample the command's RSS parts from /proc (0: never)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: measure [-o stats.json] [-sample 50ms] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		os.Exit(2)
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(127)
	}
	// Pass SIGINT and SIGTERM on to the command, so that stopping measure
	// stops it (and it is still measured).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s) //nolint:errcheck
		}
	}()
	done, sampled := make(chan struct{}), make(chan peaks, 1)
	if *every > 0 {
		go sampleRSS(cmd.Process.Pid, *every, done, sampled)
	} else {
		sampled <- peaks{}
	}
	err := cmd.Wait()
	wall := time.Since(start)
	signal.Stop(sigs)
	close(done)
	k := <-sampled

	st := Stats{Command: args, WallSec: wall.Seconds(), StartUnixNS: start.UnixNano(),
		PeakAnonKiB: k.Anon, PeakFileKiB: k.File, PeakShmemKiB: k.Shmem,
		AtMaxAnonKiB: k.AtMax.Anon, AtMaxFileKiB: k.AtMax.File, RSSSamples: k.Samples}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		st.ExitCode = exitErr.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(127)
	}
	if ps := cmd.ProcessState; ps != nil {
		st.UserSec = ps.UserTime().Seconds()
		st.SysSec = ps.SystemTime().Seconds()
		st.CPUSec = st.UserSec + st.SysSec
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			st.MaxRSSKiB = int64(ru.Maxrss)
			if runtime.GOOS == "darwin" { // bytes there, KiB on Linux
				st.MaxRSSKiB /= 1024
			}
		}
	}
	fmt.Fprintf(os.Stderr, "measure: wall %.3fs user %.3fs sys %.3fs peak RSS %.1f MiB (sampled: anon %.1f, file %.1f MiB) exit %d\n",
		st.WallSec, st.UserSec, st.SysSec, float64(st.MaxRSSKiB)/1024, float64(st.PeakAnonKiB)/1024, float64(st.PeakFileKiB)/1024, st.ExitCode)
	if *out != "" {
		b, _ := json.MarshalIndent(st, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "measure:", err)
		}
	}
	os.Exit(st.ExitCode)
}
