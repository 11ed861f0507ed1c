package artifacts

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// Limits that stop a hostile or broken archive from filling the disk. The OpenShell charts are
// a few hundred kilobytes; these leave two orders of magnitude of room.
const (
	maxExtractedFile  = 16 << 20
	maxExtractedTotal = 128 << 20
	maxArchiveEntries = 200_000
)

// The permission bits of what ExtractHelm writes: private directories (the tree's root is an
// os.MkdirTemp, which makes it 0700 as well) and private files.
const (
	extractDirMode  fs.FileMode = 0o700
	extractFileMode fs.FileMode = 0o600
)

// EntryError is an archive entry refused by the extraction rules.
type EntryError struct {
	Archive string
	Entry   string
	Reason  string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("OpenShell source archive %s: entry %q: %s", e.Archive, e.Entry, e.Reason)
}

// ExtractHelm unpacks only the Helm subtree (<TopDirectory>/<HelmDirectory>/) of the verified
// .tar.gz src into dest, keeping paths relative to the top directory, so a chart pinned as
// "deploy/helm/openshell" ends up at dest/deploy/helm/openshell.
//
// Every entry name in the archive is checked: absolute names and ".." components are refused
// anywhere (an archive containing them is not trustworthy at all). Inside the subtree only
// directories and regular files are accepted; symlinks, hard links, devices and FIFOs are
// refused with the entry named. dest must not exist: the tree is built in a temporary sibling
// and renamed into place only when complete, so a refusal leaves nothing behind.
func ExtractHelm(src *Verified, archive pins.SourceArchive, dest string) error {
	r, err := src.open()
	if err != nil {
		return fmt.Errorf("extract Helm charts: %w", err)
	}
	if archive.TopDirectory == "" || archive.HelmDirectory == "" {
		return errors.New("extract Helm charts: the pin's topDirectory and helmDirectory must both be set")
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("extract Helm charts: destination %s already exists; remove it or choose an empty location", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("extract Helm charts: %w", err)
	}
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, extractDirMode); err != nil {
		return fmt.Errorf("extract Helm charts: create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".partial-")
	if err != nil {
		return fmt.Errorf("extract Helm charts: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	x := &extractor{archive: src.Path(), root: tmp, top: archive.TopDirectory, prefix: path.Join(archive.TopDirectory, archive.HelmDirectory)}
	if err := x.run(r); err != nil {
		return err
	}
	if x.found == 0 {
		return fmt.Errorf("OpenShell source archive %s has no %s/ directory; check openshell.sourceArchive.topDirectory and helmDirectory in the pin file", src.Path(), x.prefix)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("extract Helm charts: move into place: %w", err)
	}
	ok = true
	return nil
}

type extractor struct {
	archive string
	root    string
	top     string
	prefix  string // <top>/<helm dir>, the only subtree written
	found   int
	total   int64
}

func (x *extractor) refuse(entry, format string, a ...any) error {
	return &EntryError{Archive: x.archive, Entry: entry, Reason: fmt.Sprintf(format, a...)}
}

func (x *extractor) run(r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("OpenShell source archive %s is not gzip data: %w", x.archive, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for entries := 0; ; entries++ {
		if entries > maxArchiveEntries {
			return fmt.Errorf("OpenShell source archive %s has more than %d entries; refusing to read further", x.archive, maxArchiveEntries)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read OpenShell source archive %s: %w", x.archive, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			// GitHub tarballs start with a pax global header holding the commit id.
			continue
		}
		if err := checkEntryName(hdr.Name); err != nil {
			return x.refuse(hdr.Name, "contains an unsafe path (%v); refusing the whole archive", err)
		}
		name := path.Clean(hdr.Name)
		if name != x.prefix && !strings.HasPrefix(name, x.prefix+"/") {
			continue
		}
		if err := x.write(tr, hdr, name); err != nil {
			return err
		}
		x.found++
	}
}

// checkEntryName refuses names that could land outside the destination.
func checkEntryName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case strings.ContainsRune(name, 0):
		return errors.New("NUL byte in name")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case strings.Contains(name, `\`):
		return errors.New("backslash in name")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return errors.New(`".." path component`)
		}
	}
	return nil
}

func (x *extractor) write(tr *tar.Reader, hdr *tar.Header, name string) error {
	// Paths stay relative to the top directory, so pinned chart paths resolve unchanged.
	rel := strings.TrimPrefix(name, x.top+"/")
	target := filepath.Join(x.root, filepath.FromSlash(rel))
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, extractDirMode); err != nil {
			return fmt.Errorf("extract %q: %w", hdr.Name, err)
		}
		return nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still use TypeRegA
		if name == x.prefix {
			return x.refuse(hdr.Name, "the Helm directory itself is a regular file")
		}
		return x.writeFile(tr, hdr, target)
	case tar.TypeSymlink:
		return x.refuse(hdr.Name, "symlink to %q; only directories and regular files are extracted", hdr.Linkname)
	case tar.TypeLink:
		return x.refuse(hdr.Name, "hard link to %q; only directories and regular files are extracted", hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return x.refuse(hdr.Name, "device node; only directories and regular files are extracted")
	case tar.TypeFifo:
		return x.refuse(hdr.Name, "FIFO; only directories and regular files are extracted")
	default:
		return x.refuse(hdr.Name, "unsupported entry type %q; only directories and regular files are extracted", hdr.Typeflag)
	}
}

func (x *extractor) writeFile(tr *tar.Reader, hdr *tar.Header, target string) error {
	if hdr.Size > maxExtractedFile {
		return x.refuse(hdr.Name, "%d bytes exceeds the %d-byte limit for a chart file", hdr.Size, maxExtractedFile)
	}
	x.total += hdr.Size
	if x.total > maxExtractedTotal {
		return x.refuse(hdr.Name, "the Helm subtree exceeds %d bytes in total", maxExtractedTotal)
	}
	if err := os.MkdirAll(filepath.Dir(target), extractDirMode); err != nil {
		return fmt.Errorf("extract %q: %w", hdr.Name, err)
	}
	// Every directory under root was made here, so O_NOFOLLOW|O_EXCL only guards against a
	// duplicate entry.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, extractFileMode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return x.refuse(hdr.Name, "appears twice in the archive")
		}
		return fmt.Errorf("extract %q: %w", hdr.Name, err)
	}
	n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extract %q: %w", hdr.Name, err)
	}
	if n != hdr.Size {
		return x.refuse(hdr.Name, "truncated: %d of %d bytes", n, hdr.Size)
	}
	return nil
}
