package pinbundle

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/progress"
)

// progressStep is how many bytes pass between transfer reports.
const progressStep = 256 << 10

// transferCounter reports the bytes of one blob, added to those of the blobs before it.
type transferCounter struct {
	rep               progress.Reporter
	base, total, n, r int64
}

func (t *transferCounter) Write(b []byte) (int, error) {
	t.n += int64(len(b))
	if t.n-t.r >= progressStep {
		t.r = t.n
		t.rep.Transfer(t.base+t.n, t.total)
	}
	return len(b), nil
}

// pack writes the bundle file from the partial directory: the tar is written to a temporary
// file beside out, synced and renamed over out, so out is a whole bundle or absent. The small
// files come first (occ-bundle.json before any blob, so a reader of a truncated bundle still
// knows what each blob belongs to), then the blobs in the order they were fetched; each blob
// is hashed again as it is copied.
func pack(dir layoutDir, blobs []string, out string, rep progress.Reporter) (err error) {
	var total int64
	for _, d := range blobs {
		fi, err := os.Stat(dir.blobPath(d))
		if err != nil {
			return fmt.Errorf("write bundle %s: %w", out, err)
		}
		total += fi.Size()
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	for _, name := range []string{LayoutFile, ContentsFile, IndexFile} {
		if err := addFile(tw, filepath.Join(dir.root, name), name, ""); err != nil {
			return fmt.Errorf("write bundle %s: %w", out, err)
		}
	}
	var done int64
	for _, d := range blobs {
		hexDigest := strings.TrimPrefix(d, "sha256:")
		if err := addFile(tw, dir.blobPath(d), blobsDir+"/"+hexDigest, hexDigest); err != nil {
			return fmt.Errorf("write bundle %s: %w", out, err)
		}
		fi, _ := os.Stat(dir.blobPath(d))
		done += fi.Size()
		rep.Transfer(done, total)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("write bundle %s: %w", out, err)
	}
	return fsutil.SyncDir(filepath.Dir(out))
}

// epoch is every entry's modification time: the same artifacts make the same tar.
var epoch = time.Unix(0, 0).UTC()

// addFile copies the file at path into tw as name; with wantHex set its SHA-256 must be that.
func addFile(tw *tar.Writer, path, name, wantHex string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: fi.Size(), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(tw, h), f, make([]byte, 1<<20)); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); wantHex != "" && got != wantHex {
		return fmt.Errorf("the blob %s in the partial directory changed after it was verified (its sha256 is now %s); remove %s and create the bundle again", name, got, path)
	}
	return nil
}
