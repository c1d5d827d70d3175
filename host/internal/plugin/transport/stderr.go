package transport

import (
	"fmt"
	"sync"
)

// StderrKeep is how much of a guest's stderr an error carries, half from
// the start and half from the end: a Go guest prints why it died first
// ("panic: …", "fatal error: stack overflow") and then a traceback that
// can run to thousands of frames, so a tail alone would lose the reason.
const StderrKeep = 8 << 10

// StderrBuffer keeps the first and last bytes written to it; the guest may
// write without bound, the host keeps at most max bytes. It is the stderr
// of one instance, reset before each call.
type StderrBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // ring of the last max/2 bytes once head is full
	start   int    // ring start in tail
	dropped int64
}

func NewStderrBuffer(max int) *StderrBuffer { return &StderrBuffer{max: max} }

func (b *StderrBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	half := b.max / 2
	if room := half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < half {
			k := min(half-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		// Full: overwrite the oldest bytes.
		k := min(half-b.start, len(p))
		copy(b.tail[b.start:], p[:k])
		b.dropped += int64(k)
		b.start = (b.start + k) % half
		p = p[k:]
	}
	return n, nil
}

// String returns what was kept, marking the gap when bytes were dropped.
func (b *StderrBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte{}, b.tail[b.start:]...), b.tail[:b.start]...)
	if b.dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n…(%d bytes dropped)…\n%s", b.head, b.dropped, tail)
}

// Reset forgets everything, so an error carries only its own call's output.
func (b *StderrBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.head, b.tail, b.start, b.dropped = b.head[:0], b.tail[:0], 0, 0
}
