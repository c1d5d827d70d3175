// Command goguest is a Go program for wasip1 that exercises the runtime
// (goroutines, channels, maps, garbage collection, deep recursion) and
// prints a digest of its results, so that a test can compare a metered
// build with the original.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
)

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	h := sha256.New()
	// Goroutines and channels.
	ch := make(chan int)
	for w := 0; w < 4; w++ {
		go func(w int) {
			s := 0
			for i := 0; i < 100000; i++ {
				s += i * w
			}
			ch <- s
		}(w)
	}
	var sums []int
	for w := 0; w < 4; w++ {
		sums = append(sums, <-ch)
	}
	sort.Ints(sums)
	fmt.Fprintln(h, sums)
	// Maps and garbage.
	m := map[string][]byte{}
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("k%d", i%997)
		m[k] = append(m[k], byte(i))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys[:10] {
		fmt.Fprintln(h, k, len(m[k]))
	}
	runtime.GC()
	fmt.Fprintln(h, fib(22), strings.Repeat("ab", 3))
	fmt.Printf("%x\n", h.Sum(nil))
	if len(os.Args) > 1 && os.Args[1] == "exit3" {
		os.Exit(3)
	}
}
