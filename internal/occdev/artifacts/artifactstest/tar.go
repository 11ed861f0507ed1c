// Package artifactstest generates archive fixtures for tests. Archives are built in Go at test
// time (archive/tar + gzip) rather than committed as binary files, so every fixture is readable
// in review and hostile entries can be composed freely.
package artifactstest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// Entry is one archive member. Type defaults to a regular file (tar.TypeReg).
type Entry struct {
	Name     string
	Type     byte
	Body     string
	Linkname string
	Mode     int64
}

// Dir is a directory entry.
func Dir(name string) Entry { return Entry{Name: name, Type: tar.TypeDir, Mode: 0o755} }

// File is a regular file entry.
func File(name, body string) Entry {
	return Entry{Name: name, Type: tar.TypeReg, Body: body, Mode: 0o644}
}

// fixedTime keeps generated archives byte-for-byte reproducible, so their checksums are stable.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// WriteTarGz writes entries as a gzip-compressed tar file at path and returns its hex SHA-256.
// A pax global header comes first, as in GitHub's tag tarballs.
func WriteTarGz(t testing.TB, path string, entries []Entry) string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag:   tar.TypeXGlobalHeader,
		PAXRecords: map[string]string{"comment": "0123456789abcdef0123456789abcdef01234567"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Typeflag: typ, Name: e.Name, Linkname: e.Linkname, Mode: mode, ModTime: fixedTime, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		if typ == tar.TypeChar || typ == tar.TypeBlock {
			hdr.Devmajor, hdr.Devminor = 1, 3
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("write header %q: %v", e.Name, err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return SHA256File(t, path)
}

// SHA256File returns the hex SHA-256 of the file at path.
func SHA256File(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
