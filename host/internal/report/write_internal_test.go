package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
)

// The page shows every failing case first, then the first passing ones,
// in results order, up to the bound; the picker holds no more than that
// at any time.
func TestForHTMLKeepsFailuresFirstWithinTheBound(t *testing.T) {
	for _, tc := range []struct {
		failing string // which of the cases fail
		want    string
	}{
		{"...x...x..", "0,1,3,7"},
		{"..........", "0,1,2,3"},
		{"xxxxxx....", "0,1,2,3"},
		{"......xxxx", "6,7,8,9"},
		{".x.x.x....", "0,1,3,5"},
		{"........xx", "0,1,8,9"},
		{"", ""},
	} {
		sp := &spill{parent: t.TempDir()}
		defer sp.remove()
		p := htmlPicker{limit: 4, spill: sp}
		for i, f := range tc.failing {
			st := results.StatusPassed
			if f == 'x' {
				st = results.StatusFailed
			}
			p.add(&results.CaseResult{CaseID: fmt.Sprint(i), Metrics: []results.MetricResult{{Metric: "m", Status: st}}})
			if held := len(p.notPassed) + len(p.passed); held > p.limit {
				t.Fatalf("%s: holds %d cases after case %d; the bound is %d", tc.failing, held, i, p.limit)
			}
		}
		shown, err := p.shown()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range shown {
			ids = append(ids, c.CaseID)
		}
		if got := strings.Join(ids, ","); got != tc.want {
			t.Errorf("%s: kept %s; want %s", tc.failing, got, tc.want)
		}
	}
}

// A Builder that cannot hold what it is given (no room on the disk, here
// no directory) says so when the reports are written, and writes neither.
func TestBuilderThatCannotSpillWritesNoReport(t *testing.T) {
	dir := t.TempDir()
	b := NewBuilder(dir)
	defer b.Close()
	// A spill directory that is gone: no file can be created in it.
	b.spill.dir = filepath.Join(dir, "gone")
	s, cases := junitRun(3)
	for i := range cases {
		b.Add(&cases[i])
	}
	err := b.Write(s, "")
	if err == nil || !strings.Contains(err.Error(), "hold case") {
		t.Fatalf("Write: %v; want the case it could not hold named", err)
	}
	for _, name := range []string{"junit.xml", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written: %v", name, err)
		}
	}
}
