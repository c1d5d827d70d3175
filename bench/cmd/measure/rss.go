package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// rssParts is what a process's resident set is made of, from the RssAnon,
// RssFile and RssShmem lines of Linux's /proc/PID/status, in KiB. The
// split matters because the file part is the binary's text and read-only
// data as the kernel maps them: on ext4 the page cache holds a binary in
// large folios and maps them whole (2 MiB a PMD), on tmpfs page by page, so
// one build's peak RSS differs by tens of MiB with where the binary lies,
// while the anonymous part — the Go heap, stacks, guest memories — is what
// the program itself allocates.
type rssParts struct {
	Anon, File, Shmem int64
}

func (p rssParts) total() int64 { return p.Anon + p.File + p.Shmem }

// parseStatus reads the RssAnon, RssFile and RssShmem lines of a
// /proc/PID/status file.
func parseStatus(b []byte) (rssParts, error) {
	var p rssParts
	found := 0
	for line := range bytes.Lines(b) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "RssAnon":
			dst = &p.Anon
		case "RssFile":
			dst = &p.File
		case "RssShmem":
			dst = &p.Shmem
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return rssParts{}, fmt.Errorf("status line %q: want a number of kB", bytes.TrimSpace(line))
		}
		v, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return rssParts{}, fmt.Errorf("status line %q: %w", bytes.TrimSpace(line), err)
		}
		*dst = v
		found++
	}
	if found != 3 {
		return rssParts{}, fmt.Errorf("status: %d of the RssAnon, RssFile and RssShmem lines", found)
	}
	return p, nil
}

// peaks are the largest of each part seen by sampling, and the parts of the
// sample whose total was largest.
type peaks struct {
	Anon, File, Shmem int64    // each part's own maximum
	AtMax             rssParts // the sample with the largest total
	Samples           int
}

func (k *peaks) add(p rssParts) {
	k.Samples++
	k.Anon, k.File, k.Shmem = max(k.Anon, p.Anon), max(k.File, p.File), max(k.Shmem, p.Shmem)
	if p.total() > k.AtMax.total() {
		k.AtMax = p
	}
}

// sampleRSS reads /proc/pid/status every interval until done is closed,
// then sends what it saw. Where there is no /proc (not Linux) it sends
// zero samples. A sample is a moment: a peak between two samples is
// missed, which rusage's Maxrss, kept by the kernel, is not.
func sampleRSS(pid int, interval time.Duration, done <-chan struct{}, out chan<- peaks) {
	var k peaks
	path := fmt.Sprintf("/proc/%d/status", pid)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if p, err := parseStatus(b); err == nil {
				k.add(p)
			}
		}
		select {
		case <-done:
			out <- k
			return
		case <-t.C:
		}
	}
}
