// Command machinecost measures what the machine charges for the things
// Anvil's host spends its CPU on, so a bench/ row can be read against the
// machine it ran on: the same build gave 0.60–0.70 ms per judge call on
// one VM and 0.27–0.47 ms on the next, and a system call cost 10–16 µs on
// the first and well under 1 µs on the second (bench/README.md, History,
// 2026-12-02). Without these numbers such a change reads as the code's.
//
//	machinecost [-dir DIR] [-json] [-scale N]
//
// It prints one line (or a JSON object with -json):
//
//   - syscall_us: one trivial system call (getppid), the kernel's entry
//     and exit cost and nothing else;
//   - file_us: create, write 1 KiB to and close one file in DIR (default
//     $TMPDIR), what the results writer pays for each cases/<id>.json;
//   - loopback_us: one 2 KiB request and 32 KiB reply over a loopback TCP
//     connection, the kernel's share of one judge call against the fake
//     judge;
//   - go_ms: decoding a fixed 1 MiB JSON document with encoding/json,
//     a Go reference for parsing and allocation speed.
//
// Each is the best of five rounds, so a short burst of other load does
// not set it. -scale divides the rounds' sizes (tests use it).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Costs is what machinecost reports.
type Costs struct {
	SyscallUS  float64 `json:"syscall_us"`
	FileUS     float64 `json:"file_us"`
	LoopbackUS float64 `json:"loopback_us"`
	GoMS       float64 `json:"go_ms"`
}

func (c Costs) String() string {
	return fmt.Sprintf("machine: syscall %.2f µs, file create+write+close %.1f µs, loopback request+reply %.1f µs, Go JSON decode of 1 MiB %.2f ms",
		c.SyscallUS, c.FileUS, c.LoopbackUS, c.GoMS)
}

func main() {
	dir := flag.String("dir", os.TempDir(), "directory to create the files in")
	asJSON := flag.Bool("json", false, "print a JSON object instead of a line")
	scale := flag.Int("scale", 1, "divide every round's size by this (for tests)")
	flag.Parse()
	c, err := measure(*dir, *scale)
	if err != nil {
		fmt.Fprintln(os.Stderr, "machinecost:", err)
		os.Exit(1)
	}
	if *asJSON {
		b, _ := json.Marshal(c)
		fmt.Println(string(b))
		return
	}
	fmt.Println(c)
}

func measure(dir string, scale int) (Costs, error) {
	if scale < 1 {
		return Costs{}, fmt.Errorf("-scale %d: want at least 1", scale)
	}
	var c Costs
	var err error
	c.SyscallUS = best(func() float64 { return perOp(200_000/scale, func(int) { syscall.Getppid() }) * 1e6 })
	if c.FileUS, err = bestErr(func() (float64, error) { return fileCost(dir, 2000/scale) }); err != nil {
		return c, fmt.Errorf("file cost in %s: %w", dir, err)
	}
	if c.LoopbackUS, err = bestErr(func() (float64, error) { return loopbackCost(2000 / scale) }); err != nil {
		return c, fmt.Errorf("loopback cost: %w", err)
	}
	doc := jsonDocument(1 << 20 / scale)
	c.GoMS = best(func() float64 {
		return perOp(4, func(int) {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				panic(err) // the document is ours
			}
		}) * 1e3 * float64(scale)
	})
	return c, nil
}

const rounds = 5

func best(f func() float64) float64 {
	v, _ := bestErr(func() (float64, error) { return f(), nil })
	return v
}

func bestErr(f func() (float64, error)) (float64, error) {
	m := 0.0
	for i := range rounds {
		v, err := f()
		if err != nil {
			return 0, err
		}
		if i == 0 || v < m {
			m = v
		}
	}
	return m, nil
}

// perOp is the seconds one call of op takes, averaged over n calls.
func perOp(n int, op func(i int)) float64 {
	n = max(n, 1)
	start := time.Now()
	for i := range n {
		op(i)
	}
	return time.Since(start).Seconds() / float64(n)
}

// fileCost is the µs to create, write 1 KiB to and close one file in a
// fresh directory under dir, as the results writer does for a case file.
func fileCost(dir string, n int) (float64, error) {
	d, err := os.MkdirTemp(dir, "machinecost-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(d)
	payload := []byte(strings.Repeat("x", 1024))
	var failed error
	s := perOp(n, func(i int) {
		if failed != nil {
			return
		}
		failed = os.WriteFile(filepath.Join(d, "case-"+strconv.Itoa(i)+".json"), payload, 0o644)
	})
	return s * 1e6, failed
}

const (
	requestBytes = 2 << 10
	replyBytes   = 32 << 10
)

// loopbackCost is the µs of one request/reply exchange over loopback TCP:
// the client writes requestBytes, the server answers replyBytes once it
// has read them all.
func loopbackCost(n int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		req, reply := make([]byte, requestBytes), make([]byte, replyBytes)
		r := bufio.NewReaderSize(conn, 64<<10)
		for {
			if _, err := io.ReadFull(r, req); err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				served <- err
				return
			}
			if _, err := conn.Write(reply); err != nil {
				served <- err
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	req, reply := make([]byte, requestBytes), make([]byte, replyBytes)
	r := bufio.NewReaderSize(conn, 64<<10)
	var failed error
	s := perOp(n, func(int) {
		if failed != nil {
			return
		}
		if _, err := conn.Write(req); err != nil {
			failed = err
			return
		}
		_, failed = io.ReadFull(r, reply)
	})
	conn.Close()
	if err := <-served; err != nil && failed == nil {
		failed = err
	}
	return s * 1e6, failed
}

// jsonDocument is a fixed JSON document of about size bytes shaped like a
// judge's reply: an array of tokens, each with its logprob and a list of
// alternatives.
func jsonDocument(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"content":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"token":"t%d","logprob":-0.%04d,"top_logprobs":[`, i, i%10000)
		for j := range 5 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"token":"a%d","logprob":-%d.%03d}`, j, j, i%1000)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
