package testbed

import (
	"encoding/hex"
	"sync"
)

// CanaryHex starts every value a CanaryRandom produces (hex-encoded), so a test can search
// output, logs and files for generated credentials it never saw.
const CanaryHex = "c0ffee0cca11ab1e5ec7e7"

// CanaryRandom is an io.Reader to use in place of crypto/rand where a test must recognise the
// secrets code generates: every read starts with CanaryHex's bytes, followed by a counter byte
// that differs per read, so two generated secrets are never equal.
type CanaryRandom struct {
	mu sync.Mutex
	n  byte
}

func (c *CanaryRandom) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix, _ := hex.DecodeString(CanaryHex)
	for i := range p {
		if i < len(prefix) {
			p[i] = prefix[i]
		} else {
			p[i] = c.n
		}
	}
	c.n++
	return len(p), nil
}
