package artifacts

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/artifacts/artifactstest"
)

// FuzzExtractHelm feeds arbitrary bytes to the extractor as a verified archive. Whatever the
// input, it must not panic, and when it succeeds every extracted path must be a directory or a
// regular file inside the destination's Helm subtree.
func FuzzExtractHelm(f *testing.F) {
	seedDir := f.TempDir()
	for i, entries := range [][]artifactstest.Entry{
		goodEntries(),
		append(goodEntries(), artifactstest.File(top+"deploy/helm/../../x", "x")),
		append(goodEntries(), artifactstest.Entry{Name: top + "deploy/helm/l", Type: tar.TypeSymlink, Linkname: "/"}),
	} {
		p := filepath.Join(seedDir, "seed"+string(rune('a'+i))+".tar.gz")
		artifactstest.WriteTarGz(f, p, entries)
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.tar.gz")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		v, err := OpenVerified(p, hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		dest := filepath.Join(dir, "out")
		if err := ExtractHelm(v, testArchive, dest); err != nil {
			return
		}
		err = filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if !fi.IsDir() && !fi.Mode().IsRegular() {
				t.Errorf("extracted %s of type %s", p, fi.Mode().Type())
			}
			rel, _ := filepath.Rel(dest, p)
			if rel != "." && rel != "deploy" && !strings.HasPrefix(rel, "deploy/helm") {
				t.Errorf("extracted %s outside the Helm subtree", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
