package option

import (
	"os"
	"path/filepath"
	"testing"
)

// --pin-file naming a typo, a directory, or the file itself: the rule reads as the end of
// "--pin-file "<path>" …", and only the file passes.
func TestRegularFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pins.yaml")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{filepath.Join(dir, "absent"): "does not exist", dir: "is not a regular file", file: ""} {
		got := ""
		if err := RegularFile(path); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("RegularFile(%s) = %q, want %q", path, got, want)
		}
	}
}
