package dockerbed

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// The chain ID of one layer is its diff ID; of two, the sha256 of "<first> <second>"; a config
// without layers, or not JSON, is an error.
func TestTopChainID(t *testing.T) {
	a, b := "sha256:"+fmt.Sprintf("%064x", 1), "sha256:"+fmt.Sprintf("%064x", 2)
	if got, err := TopChainID([]byte(`{"rootfs":{"type":"layers","diff_ids":["` + a + `"]}}`)); err != nil || got != a {
		t.Errorf("one layer: %q, %v; want %s", got, err, a)
	}
	want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(a+" "+b)))
	if got, err := TopChainID([]byte(`{"rootfs":{"diff_ids":["` + a + `","` + b + `"]}}`)); err != nil || got != want {
		t.Errorf("two layers: %q, %v; want %s", got, err, want)
	}
	for _, bad := range []string{`{"rootfs":{"diff_ids":[]}}`, `not json`} {
		if got, err := TopChainID([]byte(bad)); err == nil {
			t.Errorf("%s: %q, want an error", bad, got)
		}
	}
}
