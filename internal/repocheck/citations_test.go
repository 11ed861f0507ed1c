package repocheck

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation matches a pointer to a document that lives outside the repository: a section sign
// with a number, the project's specification seeds and fact sheets by name, or a path on the
// machine that wrote the code. The reader of the code has none of them, so a comment states the
// fact itself.
var citation = regexp.MustCompile(`(?i)§\s*[0-9]|reference §|fact sheet|\bseeds?[ /]0[0-9]{2}|\bseeds/|/work/shared|oce-control-plane\.md|oce-behaviour\.md|(?-i:WIRE-v[0-9]|\bWIRE §|\bPINS\.md)`)

// checked are the kinds of file whose text a reader of the repository reads.
var checked = []string{".go", ".proto", ".md", ".yaml", ".yml", ".sh", "Makefile", "Dockerfile"}

// A maintainer pastes "see reference §5" or "seed 001" into a comment or a doc: the check names
// the file and line, so the citation is replaced by the fact before it lands.
func TestNoCitationsOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs("citations_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if path == self || !isChecked(d.Name()) {
			return nil
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for n := 1; sc.Scan(); n++ {
			if m := citation.FindString(sc.Text()); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d cites %q, a document outside the repository; state the fact itself:\n\t%s", rel, n, m, strings.TrimSpace(sc.Text()))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the source tree; a wrong root would pass vacuously.
	if files < 100 {
		t.Fatalf("checked only %d files under %s; the walk did not reach the source tree", files, root)
	}
}

func isChecked(name string) bool {
	for _, s := range checked {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
