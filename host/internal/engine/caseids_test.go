package engine

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func writeDataset(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cases.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCaseIDsTellACollisionFromARepeat: an id whose hash an earlier, other
// id had is not a repeat (the earlier record is read again to tell), and
// a repeat of it afterwards still is.
func TestCaseIDsTellACollisionFromARepeat(t *testing.T) {
	path := writeDataset(t, []string{`{"id":"a"}`, `# note`, `{"id":"b"}`, `{"id":"c"}`})
	s := newCaseIDs()
	if _, rep := s.add(path, "a", 1); rep {
		t.Fatal("first id a: repeated")
	}
	// Pretend "c" hashes as "a" did: record 1 holds "a", so no repeat.
	s.first[maphash.String(s.seed, "c")] = 1
	if _, rep := s.add(path, "c", 4); rep {
		t.Fatal("c colliding with a: called a repeat")
	}
	if prev, rep := s.add(path, "c", 7); !rep || prev != 4 {
		t.Fatalf("c again: repeated %v at %d; want record 4", rep, prev)
	}
	if prev, rep := s.add(path, "a", 9); !rep || prev != 1 {
		t.Fatalf("a again: repeated %v at %d; want record 1", rep, prev)
	}
	if _, rep := s.add(path, "b", 3); rep {
		t.Fatal("b: repeated")
	}
}

// TestRepeatedIDIsRefusedNamingBothRecords goes through the dataset.
func TestRepeatedIDIsRefusedNamingBothRecords(t *testing.T) {
	path := writeDataset(t, []string{`{"id":"x"}`, `{"id":"y"}`, ``, `{"id":"x"}`})
	d, err := OpenDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var last error
	for last == nil {
		_, last = d.Next(context.Background())
	}
	want := fmt.Sprintf(`%s:4: duplicate case id "x" (first seen at record 1)`, path)
	if last.Error() != want {
		t.Fatalf("error %q; want %q", last, want)
	}
}

// TestDatasetIDMemoryIsSmall: what a dataset keeps per case to refuse
// repeated ids stays near the hash table's (a map of the ids themselves
// kept ≈ 47 bytes a case at 100,000 cases).
func TestDatasetIDMemoryIsSmall(t *testing.T) {
	const n = 100_000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"id":"case-%06d","input":"q"}`, i)
	}
	path := writeDataset(t, lines)
	d, err := OpenDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for {
		if _, err := d.Next(context.Background()); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(d)
	if perCase := float64(after.HeapAlloc-before.HeapAlloc) / n; perCase > 30 {
		t.Errorf("%.1f bytes of heap a case after reading %d; want ≤ 30", perCase, n)
	}
}
