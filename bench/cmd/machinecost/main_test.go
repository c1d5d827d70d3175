package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMeasureGivesEveryCost(t *testing.T) {
	c, err := measure(t.TempDir(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"syscall_us": c.SyscallUS, "file_us": c.FileUS, "loopback_us": c.LoopbackUS, "go_ms": c.GoMS,
	} {
		if !(v > 0) || v > 1e6 {
			t.Errorf("%s = %v, want a positive cost", name, v)
		}
	}
	// Creating a file is several system calls, each at least the cost of a
	// trivial one.
	if c.FileUS < c.SyscallUS {
		t.Errorf("file create %.3f µs cheaper than one trivial syscall %.3f µs", c.FileUS, c.SyscallUS)
	}
	if line := c.String(); !strings.HasPrefix(line, "machine: syscall ") || strings.Count(line, ",") != 3 {
		t.Errorf("line %q", line)
	}
}

func TestMeasureNamesTheDirectoryItCannotUse(t *testing.T) {
	_, err := measure("/nonexistent/machinecost", 100)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/machinecost") {
		t.Fatalf("err = %v, want it to name the directory", err)
	}
}

func TestJSONDocumentIsValidAndSized(t *testing.T) {
	doc := jsonDocument(64 << 10)
	if !json.Valid(doc) {
		t.Fatal("invalid JSON")
	}
	if len(doc) < 64<<10 || len(doc) > 66<<10 {
		t.Errorf("%d bytes, want about 64 KiB", len(doc))
	}
}

func TestScaleBelowOneIsRefused(t *testing.T) {
	if _, err := measure(t.TempDir(), 0); err == nil {
		t.Fatal("scale 0 accepted")
	}
}
