package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A named pipe, a device or a directory given where occ reads a file is refused at once, naming
// what it is (opening a pipe for reading would otherwise wait for a writer that never comes);
// a regular file, and a symlink to one, are read.
func TestOpenRegularRefusesWhatWouldBlock(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pins.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file.yaml")
	if err := os.WriteFile(file, []byte("schemaVersion: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe", "/dev/null": "a device", dir: "a directory"} {
		_, err := ReadRegular(path)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadRegular(%s) = %v, want it refused as %s", path, err, kind)
		}
	}
	for _, path := range []string{file, link} {
		if data, err := ReadRegular(path); err != nil || string(data) != "schemaVersion: 1\n" {
			t.Errorf("ReadRegular(%s) = %q, %v", path, data, err)
		}
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadRegular of a missing file = %v, want not exist", err)
	}
}
