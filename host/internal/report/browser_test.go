package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentanvil/anvil/host/internal/calibrate"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/internal/testkit"
)

// chromiumPath is Debian's chromium, which scripts/ci-deps-browser
// installs for CI.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless chromium for one test, with a profile of its
// own and nothing that reaches the network.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no browser at %s: install Debian's chromium (scripts/ci-deps-browser; .ci/run does) to render report.html in a real browser", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	return bctx
}

// console collects what a page writes to its console: calls of the
// console API, uncaught exceptions and browser log entries (a resource
// that failed to load).
type console struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	marker   chan struct{}
}

const endMarker = "anvil-test: end of page checks"

// watchConsole subscribes before the page loads, so nothing is missed.
func watchConsole(ctx context.Context) *console {
	c := &console{marker: make(chan struct{})}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Text == endMarker {
				close(c.marker)
				continue
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			c.mu.Unlock()
		}
	}()
	return c
}

// problems logs a marker and waits for it — the console keeps order, so
// every message the page wrote before is in — then returns the errors and
// warnings.
func (c *console) problems(t *testing.T, ctx context.Context) []string {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`console.log(`+"`"+endMarker+"`"+`)`)); err != nil {
		t.Fatalf("log the end marker: %v", err)
	}
	select {
	case <-c.marker:
	case <-ctx.Done():
		t.Fatal("the console's end marker never arrived")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.messages {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleException, chromedp.ConsoleWarning:
			out = append(out, m.String())
		}
	}
	return out
}

func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// The console watch catches what it must: a page with a console.error and
// an uncaught exception is not reported clean.
func TestBrowserConsoleWatchCatchesErrors(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	ctx := browser(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<!DOCTYPE html><html><body><p>bad</p><script>console.error("broken chart"); undefinedFunction();</script></body></html>`), 0o644)
	watch := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL(page))); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(watch.problems(t, ctx), "\n")
	if !strings.Contains(got, "error: broken chart") || !strings.Contains(got, "undefinedFunction") {
		t.Errorf("console problems = %q; want the console.error and the ReferenceError", got)
	}
}

// report.html in a real browser: it loads with no console error or
// warning, the charts and the DAG drawing are there and laid out with a
// size, the path's nodes are painted by the page's CSS, the filter
// script works, and a screenshot shows the pass colour of the charts.
func TestReportInARealBrowser(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	ctx := browser(t)
	// As a run that was calibrated leaves it: results, cases/ and
	// calibration.json, then report.Write.
	s, cases := qualityFixture(t)
	dir := writeRun(t, cases)
	if err := calibrate.WriteFile(dir, calibrationFixture()); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	watch := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL(page))); err != nil {
		t.Fatal(err)
	}

	type box struct{ W, H float64 }
	type pageLayout struct {
		Charts, Histograms, Intervals, Scatters, Points, DAGs, TakenNodes, SkippedNodes, TakenEdges int
		DAG, Histogram                                                                              box
		TakenFill, SkippedOpacity                                                                   string
		ArrowResolved                                                                               bool
	}
	layout, err := chromedp.Run(ctx, chromedp.Evaluate[pageLayout](`(() => {
		const q = s => document.querySelectorAll(s);
		const dag = document.querySelector("svg.dag-svg");
		// Open the row's details so the drawing is laid out.
		for (const d of q("tr.more")) { d.hidden = false; }
		const bb = el => { const r = el.getBoundingClientRect(); return {W: r.width, H: r.height}; };
		const taken = document.querySelector("svg.dag-svg .dag-node.taken rect, svg.dag-svg .dag-node.taken polygon");
		const skipped = document.querySelector("svg.dag-svg .dag-node.skipped");
		return {
			Charts: q("svg.chart").length, Histograms: q("svg.chart.histogram").length, Intervals: q("svg.chart.interval").length,
			Scatters: q("svg.chart.scatter").length, Points: q("svg.chart.scatter circle.point").length,
			DAGs: q("svg.dag-svg").length, TakenNodes: q("svg.dag-svg .dag-node.taken").length,
			SkippedNodes: q("svg.dag-svg .dag-node.skipped").length, TakenEdges: q("svg.dag-svg .dag-edge.taken").length,
			DAG: dag ? bb(dag) : {W: 0, H: 0},
			Histogram: bb(document.querySelector("svg.chart.histogram")),
			TakenFill: taken ? getComputedStyle(taken).fill : "",
			SkippedOpacity: skipped ? getComputedStyle(skipped).opacity : "",
			ArrowResolved: !!document.getElementById("dag-arrow"),
		};
	})()`))
	if err != nil {
		t.Fatalf("inspect the page: %v", err)
	}
	if layout.Histograms != 1 || layout.Intervals != 3 || layout.Scatters != 1 || layout.Points != 3 || layout.Charts != 6 || layout.DAGs != 1 {
		t.Errorf("charts %d (histograms %d, intervals %d, scatters %d with %d points), dag drawings %d; want 6 (1, 3, 1 with 3) and 1",
			layout.Charts, layout.Histograms, layout.Intervals, layout.Scatters, layout.Points, layout.DAGs)
	}
	if layout.TakenNodes != 4 || layout.SkippedNodes != 3 || layout.TakenEdges != 3 {
		t.Errorf("dag path: %d taken nodes, %d skipped, %d taken edges; want 4, 3, 3", layout.TakenNodes, layout.SkippedNodes, layout.TakenEdges)
	}
	if layout.DAG.W < 100 || layout.DAG.H < 100 || layout.Histogram.W < 200 || layout.Histogram.H < 100 {
		t.Errorf("laid-out sizes: dag %+v, histogram %+v; want both drawn at their size", layout.DAG, layout.Histogram)
	}
	// --pass-bg is #dcfae6 in the light theme headless chromium uses.
	if layout.TakenFill != "rgb(220, 250, 230)" || layout.SkippedOpacity != "0.55" || !layout.ArrowResolved {
		t.Errorf("path styling: taken fill %q, skipped opacity %q, arrow marker %v; want the page's CSS applied", layout.TakenFill, layout.SkippedOpacity, layout.ArrowResolved)
	}

	// The filter script: failed rows only.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const s = document.getElementById("f-status"); s.value = "failed"; s.dispatchEvent(new Event("change"));
		return [...document.querySelectorAll("tr.mr")].filter(r => !r.hidden).length;
	})()`))
	if err != nil || shown != 2 {
		t.Errorf("filter to failed rows shows %d rows (err %v); want 2", shown, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`(() => { const s = document.getElementById("f-status"); s.value = "all"; s.dispatchEvent(new Event("change")); for (const d of document.querySelectorAll("tr.more")) { d.hidden = false; } })()`)); err != nil {
		t.Fatal(err)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if d := os.Getenv("ANVIL_SCREENSHOT_DIR"); d != "" {
		os.WriteFile(filepath.Join(d, "report.png"), shot, 0o644)
	}
	// The histogram's and the panel's pass bars are --pass-line, #75e0a7.
	if n := pixelsNear(img, 0x75, 0xe0, 0xa7); n < 500 {
		t.Errorf("the screenshot has %d pixels of the pass colour; want the charts' bars (≥ 500)", n)
	}
	if problems := watch.problems(t, ctx); len(problems) > 0 {
		t.Errorf("report.html wrote to the console:\n%s", strings.Join(problems, "\n"))
	}
}

func pixelsNear(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	near := func(a uint32, want uint8) bool { d := int(a>>8) - int(want); return d > -6 && d < 6 }
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}
