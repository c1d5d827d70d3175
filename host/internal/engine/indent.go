package engine

import "bytes"

// appendIndent appends src, compact JSON that encoding/json wrote, as
// json.Indent(dst, src, "", "  ") lays it out. json.Indent runs its
// validating scanner over every byte, which was a third of the writer's
// CPU for a case file; here the input is encoding/json's own output, so
// only strings need tracking. For input that is not compact, valid JSON
// the result is unspecified (TestAppendIndentIsJSONIndent and
// FuzzAppendIndent hold it to json.Indent on encoding/json's output).
func appendIndent(dst, src []byte) []byte {
	depth := 0
	// open is set just after { or [: the next byte decides between an
	// empty value ({} or []) and a first member on its own line.
	open := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if open {
			open = false
			if c != '}' && c != ']' {
				depth++
				dst = newline(dst, depth)
			} else {
				dst = append(dst, c)
				continue
			}
		}
		switch c {
		case '"':
			// Copy the string through its closing quote: the first quote
			// after an even run of backslashes (IndexByte: most of a case
			// file is strings).
			j := i + 1
			for {
				k := bytes.IndexByte(src[j:], '"')
				if k < 0 {
					j = len(src)
					break
				}
				j += k
				run := 0
				for p := j - 1; p > i && src[p] == '\\'; p-- {
					run++
				}
				if run%2 == 0 {
					break
				}
				j++
			}
			end := min(j+1, len(src))
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			open = true
		case '}', ']':
			depth--
			dst = newline(dst, depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = newline(dst, depth)
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}
