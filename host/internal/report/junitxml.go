package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// junit.xml is written by hand, byte for byte what an xml.Encoder with
// Indent("", "  ") wrote of the same elements (writeJUnitReference in the
// tests): reflecting over every testcase was a few percent of a large
// run's CPU. The document's shape is fixed, so its indentation is too.

// junitChunk is how much of the document is held before it is written:
// w sees a few large writes whatever the number of cases.
const junitChunk = 32 << 10

// writeJUnit writes the document whose counts are known, walking each once
// per suite for its cases.
func writeJUnit(w io.Writer, counts *junitCounts, each Results) error {
	root, idx := counts.finish()
	out := junitOut{w: w, b: make([]byte, 0, junitChunk+junitChunk/4)}
	out.b = append(out.b, xml.Header...)
	out.b = appendJUnitSuiteStart(out.b, "", "testsuites", root.Name, root.Tests, root.Failures, root.Errors, root.Skipped)
	for i := range root.Suites {
		su := &root.Suites[i]
		out.b = appendJUnitSuiteStart(out.b, "\n  ", "testsuite", su.Name, su.Tests, su.Failures, su.Errors, su.Skipped)
		written := 0
		err := each(func(c *engine.CaseResult) error {
			for k := range c.Metrics {
				mr := &c.Metrics[k]
				if j, ok := idx[mr.Metric]; ok && j == i {
					tc := junitCaseOf(c.CaseID, mr)
					out.b = appendJUnitCase(out.b, &tc)
					written++
					if err := out.spill(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for k := range su.Cases { // the unverified gate, after the cases
			out.b = appendJUnitCase(out.b, &su.Cases[k])
			written++
		}
		out.b = appendJUnitEnd(out.b, written > 0, "\n  ", "testsuite")
		if err := out.spill(); err != nil {
			return err
		}
	}
	out.b = appendJUnitEnd(out.b, len(root.Suites) > 0, "\n", "testsuites")
	out.b = append(out.b, '\n')
	return out.write()
}

// junitOut holds the document's next bytes for w.
type junitOut struct {
	w io.Writer
	b []byte
}

// spill writes what is held once it is a chunk.
func (o *junitOut) spill() error {
	if len(o.b) < junitChunk {
		return nil
	}
	return o.write()
}

func (o *junitOut) write() error {
	_, err := o.w.Write(o.b)
	o.b = o.b[:0]
	if err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// appendJUnitSuiteStart appends the start tag of testsuites or a
// testsuite, after its indentation.
func appendJUnitSuiteStart(b []byte, indent, tag, name string, tests, failures, errors, skipped int) []byte {
	b = append(b, indent...)
	b = append(b, '<')
	b = append(b, tag...)
	b = appendXMLAttr(b, " name=\"", name)
	b = append(b, ` tests="`...)
	b = strconv.AppendInt(b, int64(tests), 10)
	b = append(b, `" failures="`...)
	b = strconv.AppendInt(b, int64(failures), 10)
	b = append(b, `" errors="`...)
	b = strconv.AppendInt(b, int64(errors), 10)
	b = append(b, `" skipped="`...)
	b = strconv.AppendInt(b, int64(skipped), 10)
	return append(b, `">`...)
}

// appendJUnitEnd appends an end tag: on a line of its own when the element
// has children, else right after its start tag, as xml.Encoder does (it
// never writes an empty element as <x/>).
func appendJUnitEnd(b []byte, children bool, indent, tag string) []byte {
	if children {
		b = append(b, indent...)
	}
	b = append(b, "</"...)
	b = append(b, tag...)
	return append(b, '>')
}

// appendJUnitCase appends a testcase, on its own line inside a testsuite.
func appendJUnitCase(b []byte, tc *junitCase) []byte {
	b = appendXMLAttr(b, "\n    <testcase name=\"", tc.Name)
	b = appendXMLAttr(b, ` classname="`, tc.Classname)
	b = append(b, ` time="`...)
	b = strconv.AppendFloat(b, float64(tc.Time), 'f', 6, 64) // junitSeconds.MarshalXMLAttr's format; no byte of it is escaped
	b = append(b, `">`...)
	children := false
	for _, m := range [...]struct {
		tag string
		msg *junitMessage
	}{{"failure", tc.Failure}, {"error", tc.Error}, {"skipped", tc.Skipped}} {
		if m.msg == nil {
			continue
		}
		children = true
		b = append(b, "\n      <"...)
		b = append(b, m.tag...)
		b = appendXMLAttr(b, ` message="`, m.msg.Message)
		if m.msg.Type != "" {
			b = appendXMLAttr(b, ` type="`, m.msg.Type)
		}
		b = append(b, '>')
		b = appendXMLText(b, m.msg.Text)
		b = appendJUnitEnd(b, false, "", m.tag)
	}
	if tc.Output != "" {
		children = true
		b = append(b, "\n      <system-out>"...)
		b = appendXMLText(b, tc.Output)
		b = append(b, "</system-out>"...)
	}
	return appendJUnitEnd(b, children, "\n    ", "testcase")
}

// appendXMLAttr appends lead, v escaped and the closing quote.
func appendXMLAttr(b []byte, lead, v string) []byte {
	b = append(b, lead...)
	b = appendXMLText(b, v)
	return append(b, '"')
}

// xmlPlain marks the ASCII bytes encoding/xml writes as they are.
var xmlPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"'&<>` {
		t[c] = false
	}
	return t
}()

// appendXMLText appends s escaped as encoding/xml escapes an attribute
// value (EscapeString) and a string element or chardata field (EscapeText,
// as Marshal calls it): the five markup characters, tab, newline and
// carriage return as references, and each byte of invalid UTF-8 and each
// character XML does not allow (most control characters, U+FFFE, U+FFFF)
// as U+FFFD.
func appendXMLText(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && xmlPlain[c] {
			i++
			continue
		}
		var esc string
		width := 1
		switch c {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if c >= utf8.RuneSelf {
				var r rune
				r, width = utf8.DecodeRuneInString(s[i:])
				if (r != utf8.RuneError || width > 1) && r != 0xFFFE && r != 0xFFFF {
					i += width
					continue
				}
			}
			esc = "\uFFFD"
		}
		b = append(b, s[last:i]...)
		b = append(b, esc...)
		i += width
		last = i
	}
	return append(b, s[last:]...)
}
