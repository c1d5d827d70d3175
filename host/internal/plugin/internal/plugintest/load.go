package plugintest

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// closer is a runtime or a loaded plugin, of whichever transport.
type closer interface{ Close(context.Context) error }

// MainRuntime is Main for a test binary whose tests share one runtime, as
// a process shares it: open makes it on the compile cache, *rt holds it
// while m's tests run, and it is closed after them.
func MainRuntime[R closer](m *testing.M, need Need, rt *R, open func(ctx context.Context, cacheDir string) (R, error)) int {
	return withGuests(need, func(cacheDir string) int {
		ctx := context.Background()
		r, err := open(ctx, cacheDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "opening the test runtime:", err)
			return 1
		}
		*rt = r
		defer r.Close(ctx)
		return m.Run()
	})
}

// Loaded is what a load of name returned, p or err: err fails t, and p is
// closed when t ends (a failed close fails t too).
func Loaded[P closer](t testing.TB, name string, p P, err error) P {
	t.Helper()
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return p
}
