package dockerbed

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one entry of an image layer the bed builds. Exactly one of Source, Data, Link or Dir
// says what it is.
type File struct {
	// Path inside the image, without a leading slash ("bin/busybox").
	Path string
	// Mode is the permission bits; 0 means 0755 for programs and directories, 0644 otherwise.
	Mode int64
	// Source is a host file copied into the image.
	Source string
	// Data is the content of a file written from memory.
	Data []byte
	// Link makes the entry a symbolic link to this target.
	Link string
	// Dir makes the entry a directory.
	Dir bool
}

// layerFromFiles builds one layer from files. The tar stream is produced afresh each time the
// layer is read (digest, diff ID, compression), so large binaries are never held in memory.
// Entries are written in path order with fixed owners and timestamps, which makes the layer,
// and so every image digest built from it, a function of the files' contents alone.
func layerFromFiles(files []File) (v1.Layer, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		if f.Source != "" {
			if _, err := os.Stat(f.Source); err != nil {
				return nil, fmt.Errorf("layer file %s: %w", f.Path, err)
			}
		}
	}
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, sorted)) }()
		return pr, nil
	}
	// Fastest gzip: the node image carries ~450 MB of binaries and its layer is compressed once
	// per cached build; the compressed bytes are kept for the write that follows the digest.
	return tarball.LayerFromOpener(opener, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
}

func writeTar(w io.Writer, files []File) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	// Parent directories are written before their contents, as docker's layer extraction expects.
	var ensureDir func(dir string) error
	ensureDir = func(dir string) error {
		if dir == "." || dir == "" || dirs[dir] {
			return nil
		}
		if err := ensureDir(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, Format: tar.FormatPAX})
	}
	for _, f := range files {
		name := strings.TrimPrefix(f.Path, "/")
		if err := ensureDir(path.Dir(name)); err != nil {
			return err
		}
		hdr := &tar.Header{Name: name, Mode: f.Mode, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			if dirs[name] {
				continue
			}
			dirs[name] = true
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
			if hdr.Mode == 0 {
				hdr.Mode = 0o755
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		case f.Source != "":
			if err := writeHostFile(tw, hdr, f.Source); err != nil {
				return fmt.Errorf("layer file %s from %s: %w", name, f.Source, err)
			}
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
			if hdr.Mode == 0 {
				hdr.Mode = 0o644
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(f.Data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func writeHostFile(tw *tar.Writer, hdr *tar.Header, src string) error {
	fh, err := os.Open(src)
	if err != nil {
		return err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	if hdr.Mode == 0 {
		hdr.Mode = 0o644
		if info.Mode()&0o111 != 0 {
			hdr.Mode = 0o755
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, fh)
	if err == nil && n != info.Size() {
		err = fmt.Errorf("file changed while it was read (%d of %d bytes)", n, info.Size())
	}
	return err
}

// busyboxApplets are the names linked to /bin/busybox in every bed image: what k3d's hooks and
// fixes exec (sh, cat, mount), what its image import and host lookup exec (sh, nslookup), and
// what a person debugging a node reaches for.
var busyboxApplets = []string{
	"[", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date", "df", "dirname", "du",
	"echo", "env", "false", "find", "grep", "head", "hostname", "id", "ip", "kill", "ln", "ls",
	"mkdir", "mknod", "mount", "mv", "nslookup", "printf", "ps", "readlink", "rm", "sed", "sh",
	"sleep", "sort", "stat", "tail", "tar", "tee", "test", "touch", "tr", "true", "umount",
	"uname", "wc", "wget", "which", "xargs",
}

// BusyboxFiles returns the layer entries for a static busybox at /bin/busybox with its applet
// links, taken from the host (Debian's busybox-static, which scripts/testdocker installs).
func BusyboxFiles() ([]File, error) {
	src, err := staticBusybox()
	if err != nil {
		return nil, err
	}
	files := []File{{Path: "bin/busybox", Source: src, Mode: 0o755}}
	for _, a := range busyboxApplets {
		files = append(files, File{Path: "bin/" + a, Link: "busybox"})
	}
	return files, nil
}

// staticBusybox finds a statically linked busybox on the host: the images have no libc, so a
// dynamically linked one would not start.
func staticBusybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox", "/usr/local/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	return "", fmt.Errorf("no statically linked busybox in /bin, /usr/bin or /usr/local/bin (install Debian's busybox-static; scripts/testdocker does)")
}

// fileDigestInput feeds what a file entry contributes to a content hash: its path, mode, kind
// and bytes (host files by the digest of their content, so a rebuilt binary changes the hash).
func fileDigestInput(w io.Writer, f File) error {
	fmt.Fprintf(w, "%s\x00%o\x00%q\x00%t\x00", f.Path, f.Mode, f.Link, f.Dir)
	if f.Source != "" {
		sum, err := sourceDigest(f.Source)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, sum)
		return err
	}
	_, err := w.Write(f.Data)
	return err
}

// sourceDigests remembers host files' digests for the life of the test binary, keyed by what
// changes when a file is rewritten, so that hashing the node image's ~450 MB of binaries happens
// once per process rather than once per image key.
var sourceDigests sync.Map // sourceStamp → string

type sourceStamp struct {
	path        string
	size, mtime int64
	ino         uint64
}

func sourceDigest(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	stamp := sourceStamp{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		stamp.ino = st.Ino
	}
	if v, ok := sourceDigests.Load(stamp); ok {
		return v.(string), nil
	}
	// Across processes the digest is remembered in a small file named by the stamp.
	memo := filepath.Join(cacheDir(), "digests", fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprintf("%+v", stamp)))))
	if b, err := os.ReadFile(memo); err == nil && len(b) == 64 {
		sourceDigests.Store(stamp, string(b))
		return string(b), nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	sourceDigests.Store(stamp, sum)
	if err := os.MkdirAll(filepath.Dir(memo), 0o755); err == nil {
		_ = writeFileAtomically(memo, []byte(sum))
	}
	return sum, nil
}

func writeFileAtomically(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
