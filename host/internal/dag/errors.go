package dag

import (
	"fmt"
	"strings"
)

// Error lists every problem found in a dag configuration, one message a
// problem, each naming file:line when known and the node ids involved.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	switch len(e.Problems) {
	case 0:
		return "dag: invalid configuration"
	case 1:
		return "dag: " + e.Problems[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dag: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p)
	}
	return b.String()
}

// problems collects messages.
type problems struct {
	file string
	list []string
}

// at formats "file:line: " (parts omitted when unknown).
func at(file string, line int) string {
	switch {
	case file != "" && line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	case file != "":
		return file + ": "
	case line > 0:
		return fmt.Sprintf("line %d: ", line)
	}
	return ""
}

// add records a problem at line (0 = unknown) about node id ("" = none).
func (p *problems) add(line int, id string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if id != "" {
		msg = fmt.Sprintf("node %q: %s", id, msg)
	}
	p.list = append(p.list, at(p.file, line)+msg)
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &Error{Problems: p.list}
}
