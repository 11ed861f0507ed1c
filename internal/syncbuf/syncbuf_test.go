package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers on several goroutines and a reader beside them: every write arrives whole, and a copy
// taken from Bytes is not changed by the writes after it.
func TestConcurrentWritesArriveWhole(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("line\n", 800) {
		t.Fatalf("%d bytes, want 800 whole lines", len(got))
	}
	before := b.Bytes()
	_, _ = b.Write([]byte("more\n"))
	if string(before) != strings.Repeat("line\n", 800) || !strings.HasSuffix(b.String(), "more\n") {
		t.Fatal("a later write changed the copy Bytes returned, or was lost")
	}
}
