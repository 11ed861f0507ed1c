package step

import (
	"io"
	"sync"
)

// SyncWriter serialises the log writes of concurrent lanes to W.
type SyncWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (s *SyncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(b)
}
