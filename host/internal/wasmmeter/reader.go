package wasmmeter

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrUnsupported is wrapped by errors that refuse a proposal the host does
// not enable.
var ErrUnsupported = errors.New("unsupported feature")

// ErrLimit is wrapped by errors that refuse a module over a structural limit
// or over the memory budget.
var ErrLimit = errors.New("over a limit")

func unsupported(proposal string) error {
	return fmt.Errorf("%w: the module uses the %s proposal, which the host does not enable", ErrUnsupported, proposal)
}

// reader decodes a slice of the input; base is the offset of b[0] in the
// whole module so that errors point at the input file.
type reader struct {
	b    []byte
	off  int
	base int
}

func (r *reader) pos() int { return r.base + r.off }

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) eof() bool { return r.off >= len(r.b) }

func (r *reader) errf(format string, args ...any) error {
	return fmt.Errorf("offset %#x: %s", r.pos(), fmt.Sprintf(format, args...))
}

var errEOF = errors.New("unexpected end of input")

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errEOF
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, errEOF
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

func (r *reader) skip(n int) error {
	if n < 0 || n > r.remaining() {
		return errEOF
	}
	r.off += n
	return nil
}

var errLEB = errors.New("malformed LEB128 number (too long or out of range)")

func (r *reader) u32() (uint32, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if r.off >= len(r.b) {
			return 0, errEOF
		}
		c := r.b[r.off]
		r.off++
		if i == 4 && c&0xF0 != 0 {
			return 0, errLEB
		}
		v |= uint32(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errLEB
}

// count reads a vector length and checks that at least minSize bytes per
// element remain, so that a hostile count cannot make anyone allocate.
func (r *reader) count(minSize int) (int, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(r.remaining()) {
		return 0, fmt.Errorf("count %d exceeds the %d bytes that remain", n, r.remaining())
	}
	return int(n), nil
}

// signed reads a signed LEB128 number of at most bits bits and returns its
// value; the unused bits of the last byte must repeat the sign.
func (r *reader) signed(bits int) (int64, error) {
	maxBytes := (bits + 6) / 7
	var v int64
	for i := 0; i < maxBytes; i++ {
		if r.off >= len(r.b) {
			return 0, errEOF
		}
		c := r.b[r.off]
		r.off++
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, errLEB
			}
			used := bits - 7*i // value bits in this byte, sign included
			if used < 7 {
				rest := c >> (used - 1) // the sign bit and the unused bits
				if rest != 0 && rest != 0x7F>>(used-1) {
					return 0, errLEB
				}
			}
		}
		v |= int64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			shift := 7 * (i + 1)
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
	}
	return 0, errLEB
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n))
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", errors.New("name is not valid UTF-8")
	}
	return string(b), nil
}
