package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Content on its way to its place is found there only once kept, whole; a discarded one leaves
// nothing behind, and the sum is the content's.
func TestHashedTempIsAtItsPlaceOnlyOnceKept(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "blob")
	tmp, err := NewHashedTemp(dest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("the destination exists before Keep: %v", err)
	}
	if tmp.Sum() != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" || tmp.Size() != 5 {
		t.Errorf("sum %s size %d", tmp.Sum(), tmp.Size())
	}
	f, err := tmp.Keep()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	tmp.Discard() // after Keep, nothing
	if data, err := os.ReadFile(dest); err != nil || string(data) != "hello" {
		t.Errorf("kept: %q %v", data, err)
	}

	other, err := NewHashedTemp(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	other.Discard()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "blob" {
		t.Errorf("left in the directory: %v", entries)
	}
}
