// Package syncbuf is a byte buffer that several goroutines may write and read at the same time:
// the log of concurrent lanes or of a child process that a caller reads while it runs or once
// the writers are done.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose writes and reads are serialised. The zero value is an empty
// buffer ready to use; a Buffer must not be copied after first use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes is a copy of what has been written so far, which later writes leave alone.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
