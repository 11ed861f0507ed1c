package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// An engineer runs `occ version` (or any command) many times a day: the cost of starting the
// binary, with every library it links (client-go, Helm, k3d, compose-go, gRPC), is what each
// command pays before it does anything. The stripped binary is built as `make build` builds it
// and run b.N times. With OCC_BENCH_KUBECTL naming a kubectl binary, `kubectl version --client`
// runs beside it as the yardstick (the target: occ no slower than kubectl).
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "occ")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(b *testing.B, name string, args ...string) {
		for i := 0; i < b.N; i++ {
			if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
				b.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
		}
	}
	b.Run("occ-version", func(b *testing.B) { run(b, bin, "version") })
	kubectl := os.Getenv("OCC_BENCH_KUBECTL")
	if kubectl == "" {
		b.Log("kubectl yardstick not run: set OCC_BENCH_KUBECTL to a kubectl binary to compare")
		return
	}
	b.Run("kubectl-version-client", func(b *testing.B) { run(b, kubectl, "version", "--client") })
}
