package dockerbed

import (
	"bytes"
	"sync"
)

// SyncBuffer collects output written from several goroutines (a flow's log, k3d's log) that a
// test reads once the writers are done or while they run.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
