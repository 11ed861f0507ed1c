package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A developer points --state-dir at a directory occ never created (a 0755 project directory,
// or /etc): status, down and up refuse it as not occ's, and never advise changing its mode,
// which would be harmful advice for a directory occ did not make. A directory occ did make,
// whose mode was loosened since, is still told how to make it private again.
func TestForeignDirectoryIsNeverAdvisedAChmod(t *testing.T) {
	foreign := stateDir(t)
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyForeign := stateDir(t)
	if err := os.Mkdir(emptyForeign, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{foreign, emptyForeign, "/etc"} {
		for name, call := range map[string]func() error{
			"Read (status)": func() error { _, err := Read(dir); return err },
			"Open (down)":   func() error { _, err := Open(dir); return err },
			"Create (up)":   func() error { d, err := Create(dir, sample()); d.closeIfOpen(); return err },
		} {
			err := call()
			if err == nil {
				t.Errorf("%s of %s succeeded", name, dir)
				continue
			}
			if strings.Contains(err.Error(), "chmod") {
				t.Errorf("%s of %s advises a chmod on a directory occ did not create:\n%v", name, dir, err)
			}
			if !strings.Contains(err.Error(), "not created by occ dev up") && !errors.Is(err, ErrExists) {
				t.Errorf("%s of %s does not say the directory is not occ's:\n%v", name, dir, err)
			}
		}
	}
	if fi, err := os.Stat(foreign); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("the foreign directory was changed: %v %v", fi.Mode(), err)
	}

	own := stateDir(t)
	d, err := Create(own, sample())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Chmod(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(own); err == nil || !strings.Contains(err.Error(), "chmod 700 "+own) {
		t.Errorf("Read of occ's own loosened directory = %v, want the chmod that makes it private again", err)
	}
}

// closeIfOpen releases a directory a test claimed by mistake.
func (d *Dir) closeIfOpen() {
	if d != nil {
		_ = d.Close()
	}
}
