// Package artifacts fetches the pinned files `occ dev up` needs (the OpenShell source archive,
// the Agent Sandbox manifest), verifies their SHA-256 against the pins, caches them by content,
// and unpacks only what is needed from them.
//
// Verification comes first, structurally: extraction and parsing accept only a *Verified, which
// only a successful checksum comparison produces, so an unverified byte is never unpacked.
package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/openclaw/occ/internal/fsutil"
)

// hashBufferSize is the read size for hashing files: large enough that syscalls are noise next
// to SHA-256 itself.
const hashBufferSize = 1 << 20

// Verified is an open file whose content matched the expected SHA-256. It keeps the descriptor
// it hashed, so the bytes later read are the bytes that were checked even if the path is
// replaced in between. Close it when done.
type Verified struct {
	file *os.File
	path string
	sum  string
	size int64
}

// ChecksumError is a file or download whose SHA-256 differs from the pin.
type ChecksumError struct {
	// What names the file or URL.
	What     string
	Expected string
	Got      string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch for %s: expected sha256 %s, got %s; it is not the pinned artifact (re-download it, or check the pin file)", e.What, e.Expected, e.Got)
}

// OpenVerified opens path and checks in one pass that its SHA-256 is want (64 lower-case hex).
// It is the offline path (--openshell-archive FILE): a local copy is verified exactly like a
// download.
func OpenVerified(path, want string) (*Verified, error) {
	if err := checkSum(want); err != nil {
		return nil, err
	}
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("open artifact: %w", err)
	}
	got, n, err := hashReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read artifact %s: %w", path, err)
	}
	if got != want {
		f.Close()
		return nil, &ChecksumError{What: path, Expected: want, Got: got}
	}
	return &Verified{file: f, path: path, sum: got, size: n}, nil
}

// CheckLocal checks, offline, the local copy path of an artifact as `up` would before using it:
// it must open with sha256 want (OpenVerified); it is closed again, and only what that finds
// is reported.
func CheckLocal(path, want string) error {
	v, err := OpenVerified(path, want)
	if err != nil {
		return err
	}
	v.Close()
	return nil
}

// hashReader returns the hex SHA-256 of r and its length. The reader is wrapped so io.Copy uses
// the large buffer instead of *os.File's WriteTo, which copies in small chunks.
func hashReader(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, hashBufferSize))
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func checkSum(s string) error {
	if len(s) != sha256.Size*2 {
		return fmt.Errorf("expected sha256 %q must be 64 lower-case hex digits", s)
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("expected sha256 %q must be 64 lower-case hex digits", s)
		}
	}
	return nil
}

// Path is the verified file's path.
func (v *Verified) Path() string { return v.path }

// SHA256 is the verified hex digest.
func (v *Verified) SHA256() string { return v.sum }

// Size is the verified length in bytes.
func (v *Verified) Size() int64 { return v.size }

// Close releases the file.
func (v *Verified) Close() error {
	if v == nil || v.file == nil {
		return nil
	}
	err := v.file.Close()
	v.file = nil
	return err
}

// open returns a reader over the verified bytes from the start, bounded by the verified size.
func (v *Verified) open() (io.Reader, error) {
	if v == nil || v.file == nil {
		return nil, errors.New("artifact is not verified (or already closed); verify it with OpenVerified or Fetch first")
	}
	return io.NewSectionReader(v.file, 0, v.size), nil
}
