package fsutil

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"os"
	"path/filepath"
	"syscall"
)

// HashedTemp is content of a known digest on its way to its place: a private temporary file
// beside the destination (O_EXCL, 0600, no symlink followed), hashed with SHA-256 as it is
// written. The caller compares Sum with the digest it expects, and only then Keeps it, which
// puts it at the destination whole; otherwise Discard removes it, so nothing unverified is ever
// found there.
type HashedTemp struct {
	f    *os.File
	h    hash.Hash
	dest string
	n    int64
	kept bool
}

// HashedMode is the permission bits of a HashedTemp's file, and so of the file it becomes.
const HashedMode = 0o600

// NewHashedTemp creates the temporary file for dest in dest's directory.
func NewHashedTemp(dest string) (*HashedTemp, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".partial-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, HashedMode)
	if err != nil {
		return nil, err
	}
	return &HashedTemp{f: f, h: sha256.New(), dest: dest}, nil
}

// Write writes to the file and the hash.
func (t *HashedTemp) Write(b []byte) (int, error) {
	n, err := t.f.Write(b)
	t.h.Write(b[:n])
	t.n += int64(n)
	return n, err
}

// Sum is the hex SHA-256 of what was written.
func (t *HashedTemp) Sum() string { return hex.EncodeToString(t.h.Sum(nil)) }

// Size is the number of bytes written.
func (t *HashedTemp) Size() int64 { return t.n }

// Name is the temporary file's path, for messages.
func (t *HashedTemp) Name() string { return t.f.Name() }

// Keep syncs the file and renames it to the destination. The file stays open and is returned:
// the descriptor is the verified content, whatever later happens to the path.
func (t *HashedTemp) Keep() (*os.File, error) {
	if err := t.f.Sync(); err != nil {
		return nil, err
	}
	if err := os.Rename(t.f.Name(), t.dest); err != nil {
		return nil, err
	}
	t.kept = true
	return t.f, nil
}

// Discard closes and removes the file unless it was kept; it is safe to defer.
func (t *HashedTemp) Discard() {
	if t.kept {
		return
	}
	t.f.Close()
	os.Remove(t.f.Name())
}
