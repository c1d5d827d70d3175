package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer is a log sink safe for concurrent writers: a test's slog
// handler writes to it from any goroutine, and the test reads it whole.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
