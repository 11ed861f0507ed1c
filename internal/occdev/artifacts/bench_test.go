package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

const benchFileSize = 200 << 20

// BenchmarkVerify measures OpenVerified (one read pass, SHA-256 as it goes) on a 200 MB file;
// compare its MB/s with `sha256sum` on the same file. The goal is at least 0.9x sha256sum.
func BenchmarkVerify(b *testing.B) {
	p := filepath.Join(b.TempDir(), "archive.bin")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	// Seeded random bytes: incompressible like a real archive, and the same on every run.
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	for written := 0; written < benchFileSize; written += len(chunk) {
		_, _ = rng.Read(chunk)
		h.Write(chunk)
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if dir := os.Getenv("OCC_BENCH_KEEP_DIR"); dir != "" {
		// Lets the benchmark report time `sha256sum` on the very same bytes.
		_ = os.Link(p, filepath.Join(dir, "verify-bench.bin"))
	}
	b.SetBytes(benchFileSize)
	b.ResetTimer()
	for b.Loop() {
		v, err := OpenVerified(p, sum)
		if err != nil {
			b.Fatal(err)
		}
		v.Close()
	}
}
