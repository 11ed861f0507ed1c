package pinbundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openclaw/occ/internal/fsutil"
)

// layoutDir is the partial directory of a bundle being created: an OCI layout on disk whose
// blobs are kept across interrupted runs. A blob is renamed to its name only after its SHA-256
// matched, and is hashed again before a later run trusts it, so what is reused is exactly what
// was verified.
type layoutDir struct {
	root string
}

func (l layoutDir) blobPath(digest string) string {
	return filepath.Join(l.root, filepath.FromSlash(blobsDir), strings.TrimPrefix(digest, "sha256:"))
}

// has reports whether the blob digest is there and still hashes to its name; a blob that does
// not (a disk error, a hand edit) is removed, to be fetched again.
func (l layoutDir) has(digest string) (bool, error) {
	path := l.blobPath(digest)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	h := sha256.New()
	_, err = io.CopyBuffer(h, f, make([]byte, 1<<20))
	f.Close()
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if "sha256:"+hex.EncodeToString(h.Sum(nil)) == digest {
		return true, nil
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("remove the corrupt blob %s: %w", path, err)
	}
	return false, nil
}

// put stores r as the blob digest: the bytes go to a temporary file beside it through SHA-256
// and are renamed to their name only when the digest (and size, when known, that is >= 0)
// matches. what names the blob in errors.
func (l layoutDir) put(digest string, size int64, r io.Reader, what string) error {
	tmp, err := fsutil.NewHashedTemp(l.blobPath(digest))
	if err != nil {
		return fmt.Errorf("store %s: %w", what, err)
	}
	defer tmp.Discard()
	n, err := io.CopyBuffer(tmp, r, make([]byte, 1<<20))
	if err != nil {
		return fmt.Errorf("download %s: %w", what, err)
	}
	if got := "sha256:" + tmp.Sum(); got != digest {
		return fmt.Errorf("%s: the registry served content whose sha256 is %s, not the pinned chain's %s; nothing was kept (try again; if it persists, the registry serves other content under this digest)", what, got, digest)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("%s: %d bytes, its descriptor says %d; nothing was kept", what, n, size)
	}
	f, err := tmp.Keep()
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", what, err)
	}
	return nil
}

func (l layoutDir) read(digest string) ([]byte, error) {
	return os.ReadFile(l.blobPath(digest))
}
