package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// colorFor says whether what is written to w may be coloured: only a
// terminal, and never when NO_COLOR is set to anything but "" (no-color.org)
// or TERM is "dumb". A pipe, a file or a test buffer gets plain text.
func colorFor(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
