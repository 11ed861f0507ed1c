package artifacts

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/artifacts/artifactstest"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

var testArchive = pins.SourceArchive{TopDirectory: "OpenShell-0.1.3-pre.2", HelmDirectory: "deploy/helm"}

const top = "OpenShell-0.1.3-pre.2/"

// goodEntries is a small tag tarball: the Helm subtree plus files that must not be extracted.
func goodEntries() []artifactstest.Entry {
	return []artifactstest.Entry{
		artifactstest.Dir(top),
		artifactstest.File(top+"README.md", "# OpenShell\n"),
		artifactstest.Dir(top + "crates/"),
		artifactstest.File(top+"crates/main.rs", "fn main() {}\n"),
		// Outside the Helm subtree a symlink is tolerated: it is simply not extracted.
		{Name: top + "docs/latest", Type: tar.TypeSymlink, Linkname: "v0.1"},
		artifactstest.Dir(top + "deploy/"),
		artifactstest.Dir(top + "deploy/helm/"),
		artifactstest.Dir(top + "deploy/helm/openshell/"),
		artifactstest.File(top+"deploy/helm/openshell/Chart.yaml", "apiVersion: v2\nname: openshell\nversion: 0.0.0\n"),
		artifactstest.Dir(top + "deploy/helm/openshell/templates/"),
		artifactstest.File(top+"deploy/helm/openshell/templates/service.yaml", "kind: Service\n"),
		// No directory entry for this one: parents are created as needed.
		artifactstest.File(top+"deploy/helm/openshell-workspace/Chart.yaml", "apiVersion: v2\nname: openshell-workspace\nversion: 0.0.0\n"),
	}
}

// server serves body at /archive.tar.gz and counts requests.
func server(t *testing.T, body []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/archive.tar.gz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func archiveFile(t *testing.T, entries []artifactstest.Entry) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "source.tar.gz")
	return p, artifactstest.WriteTarGz(t, p, entries)
}

// The second `up` on a machine finds the verified archive in the cache and does not download it
// again; the first reports progress up to the full size.
func TestFetchCachesVerifiedArchive(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	body, _ := os.ReadFile(p)
	srv, hits := server(t, body)
	var last Progress
	f := &Fetcher{CacheDir: t.TempDir(), Progress: func(p Progress) { last = p }}
	a := pins.Artifact{URL: srv.URL + "/archive.tar.gz", SHA256: sum}

	v, err := f.Fetch(context.Background(), a)
	if err != nil {
		t.Fatalf("first Fetch: %v", err)
	}
	want, _ := f.CachePath(sum)
	if v.Path() != want || v.SHA256() != sum || v.Size() != int64(len(body)) {
		t.Errorf("verified = %s %s %d, want %s %s %d", v.Path(), v.SHA256(), v.Size(), want, sum, len(body))
	}
	v.Close()
	if !last.Done || last.Received != int64(len(body)) || last.Total != int64(len(body)) {
		t.Errorf("last progress = %+v, want Done with %d bytes", last, len(body))
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cached file: %v mode %v", err, fi.Mode())
	}

	last = Progress{}
	v, err = f.Fetch(context.Background(), a)
	if err != nil {
		t.Fatalf("second Fetch: %v", err)
	}
	v.Close()
	if n := hits.Load(); n != 1 {
		t.Fatalf("server saw %d downloads, want 1 (the cached archive must be reused)", n)
	}
	if last != (Progress{}) {
		t.Errorf("a cache hit reported download progress: %+v", last)
	}
}

// A tampered or truncated cache entry is replaced by a fresh verified download.
func TestFetchReplacesCorruptCacheEntry(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	body, _ := os.ReadFile(p)
	srv, hits := server(t, body)
	f := &Fetcher{CacheDir: t.TempDir()}
	cached, _ := f.CachePath(sum)
	if err := os.MkdirAll(filepath.Dir(cached), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, body[:len(body)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := f.Fetch(context.Background(), pins.Artifact{URL: srv.URL + "/archive.tar.gz", SHA256: sum})
	if err != nil {
		t.Fatalf("Fetch over a corrupt cache entry: %v", err)
	}
	v.Close()
	if hits.Load() != 1 || artifactstest.SHA256File(t, cached) != sum {
		t.Fatalf("corrupt entry not replaced: hits %d", hits.Load())
	}
}

// A server (or a man in the middle) serving other bytes than pinned: the download is refused
// and nothing is left in the cache, so nothing can ever be extracted from it.
func TestFetchRefusesWrongChecksum(t *testing.T) {
	p, _ := archiveFile(t, goodEntries())
	body, _ := os.ReadFile(p)
	srv, _ := server(t, body)
	f := &Fetcher{CacheDir: t.TempDir()}
	wrong := strings.Repeat("0", 64)
	v, err := f.Fetch(context.Background(), pins.Artifact{URL: srv.URL + "/archive.tar.gz", SHA256: wrong})
	var sumErr *ChecksumError
	if !errors.As(err, &sumErr) || v != nil {
		t.Fatalf("Fetch = %v, %v; want a ChecksumError", v, err)
	}
	if !strings.Contains(err.Error(), "expected sha256 "+wrong) {
		t.Errorf("error %q does not name the expected sum", err)
	}
	left, _ := filepath.Glob(filepath.Join(f.CacheDir, "sha256", "*"))
	hidden, _ := filepath.Glob(filepath.Join(f.CacheDir, "sha256", ".*"))
	if len(left)+len(hidden) != 0 {
		t.Fatalf("cache holds %v %v after a refused download", left, hidden)
	}
	// Extraction only takes a *Verified, and a nil one is refused before anything is written.
	dest := filepath.Join(t.TempDir(), "helm")
	if err := ExtractHelm(v, testArchive, dest); err == nil {
		t.Fatal("ExtractHelm accepted an unverified archive")
	}
	if _, err := os.Lstat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination created for an unverified archive")
	}
}

// --openshell-archive FILE: the local copy is verified like a download; a different file is
// refused before any extraction.
func TestOfflineArchiveVerifiedAgainstPin(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	other, _ := archiveFile(t, goodEntries()[:3])
	if _, err := OpenVerified(other, sum); err == nil || !strings.Contains(err.Error(), "checksum mismatch for "+other) {
		t.Fatalf("OpenVerified(other file) = %v", err)
	}
	v, err := OpenVerified(p, sum)
	if err != nil {
		t.Fatalf("OpenVerified: %v", err)
	}
	defer v.Close()
	dest := filepath.Join(t.TempDir(), "openshell")
	if err := ExtractHelm(v, testArchive, dest); err != nil {
		t.Fatalf("ExtractHelm: %v", err)
	}
	got := map[string]bool{}
	_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dest, p)
			got[rel] = true
		}
		return nil
	})
	want := []string{"deploy/helm/openshell/Chart.yaml", "deploy/helm/openshell/templates/service.yaml", "deploy/helm/openshell-workspace/Chart.yaml"}
	if len(got) != len(want) {
		t.Errorf("extracted %v, want exactly %v", got, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing %s in %v", w, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "deploy/helm/openshell/Chart.yaml")); !strings.Contains(string(b), "name: openshell") {
		t.Errorf("Chart.yaml content = %q", b)
	}
	// Extracting twice into the same place is refused rather than merged.
	if err := ExtractHelm(v, testArchive, dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second ExtractHelm = %v", err)
	}
}

// Hostile archives: each unsafe entry is refused with its name, and nothing is left on disk.
func TestExtractRefusesUnsafeEntries(t *testing.T) {
	helm := top + "deploy/helm/"
	cases := []struct {
		name  string
		entry artifactstest.Entry
		want  string
	}{
		{"tar-slip inside subtree", artifactstest.File(helm+"openshell/../../../../../evil", "x"), `".." path component`},
		{"tar-slip at top", artifactstest.File("../evil", "x"), `".." path component`},
		{"absolute path", artifactstest.File("/etc/cron.d/evil", "x"), "absolute path"},
		{"symlink", artifactstest.Entry{Name: helm + "openshell/templates/link.yaml", Type: tar.TypeSymlink, Linkname: "/etc/passwd"}, `symlink to "/etc/passwd"`},
		{"hardlink", artifactstest.Entry{Name: helm + "openshell/values.yaml", Type: tar.TypeLink, Linkname: top + "README.md"}, "hard link to"},
		{"character device", artifactstest.Entry{Name: helm + "openshell/null", Type: tar.TypeChar}, "device node"},
		{"block device", artifactstest.Entry{Name: helm + "openshell/sda", Type: tar.TypeBlock}, "device node"},
		{"fifo", artifactstest.Entry{Name: helm + "openshell/pipe", Type: tar.TypeFifo}, "FIFO"},
		{"duplicate file", artifactstest.File(helm+"openshell/Chart.yaml", "name: other\n"), "appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries := append(goodEntries(), c.entry)
			p, sum := archiveFile(t, entries)
			v, err := OpenVerified(p, sum)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			parent := t.TempDir()
			dest := filepath.Join(parent, "openshell")
			err = ExtractHelm(v, testArchive, dest)
			var entryErr *EntryError
			if !errors.As(err, &entryErr) || entryErr.Entry != c.entry.Name || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ExtractHelm = %v; want an EntryError naming %q and %q", err, c.entry.Name, c.want)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Fatalf("refused extraction left %v behind", left)
			}
		})
	}
}

// A pin whose top directory does not match the archive (a renamed repository, a wrong tag)
// fails clearly instead of producing an empty chart tree.
func TestExtractMissingHelmSubtree(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	v, err := OpenVerified(p, sum)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	wrongTop := pins.SourceArchive{TopDirectory: "OpenShell-9.9.9", HelmDirectory: "deploy/helm"}
	parent := t.TempDir()
	err = ExtractHelm(v, wrongTop, filepath.Join(parent, "x"))
	if err == nil || !strings.Contains(err.Error(), "has no OpenShell-9.9.9/deploy/helm/ directory") {
		t.Fatalf("ExtractHelm = %v", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Fatalf("left %v behind", left)
	}
}

// Data that is not gzip at all (an HTML error page saved as the archive) is reported as such.
func TestExtractRefusesNonGzip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(p, []byte("<html>rate limited</html>"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := OpenVerified(p, artifactstest.SHA256File(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := ExtractHelm(v, testArchive, filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "not gzip data") {
		t.Fatalf("ExtractHelm = %v", err)
	}
}

// The download is bounded: a server that never answers fails after the timeout with a hint.
func TestFetchTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	f := &Fetcher{CacheDir: t.TempDir(), Timeout: 50 * time.Millisecond}
	_, err := f.Fetch(context.Background(), pins.Artifact{URL: srv.URL + "/slow", SHA256: strings.Repeat("a", 64)})
	if err == nil || !strings.Contains(err.Error(), "not complete after 50ms") {
		t.Fatalf("Fetch = %v, want a timeout naming the limit", err)
	}
}

// A wrong URL in a pin file yields the HTTP status, not a checksum puzzle.
func TestFetchHTTPError(t *testing.T) {
	srv, _ := server(t, nil)
	f := &Fetcher{CacheDir: t.TempDir()}
	_, err := f.Fetch(context.Background(), pins.Artifact{URL: srv.URL + "/missing.tar.gz", SHA256: strings.Repeat("a", 64)})
	if err == nil || !strings.Contains(err.Error(), "404 Not Found") || !strings.Contains(err.Error(), srv.URL+"/missing.tar.gz") {
		t.Fatalf("Fetch = %v", err)
	}
}

// The Agent Sandbox manifest: verified, then parsed into objects in file order.
func TestParseVerifiedManifest(t *testing.T) {
	manifest := `# Agent Sandbox v0.5.2
apiVersion: v1
kind: Namespace
metadata:
  name: agent-sandbox-system
---
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sandboxes.agents.x-k8s.io
spec:
  group: agents.x-k8s.io
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: agent-sandbox-controller
    namespace: agent-sandbox-system
`
	p := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(p, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := artifactstest.SHA256File(t, p)
	if _, err := OpenVerified(p, strings.Repeat("b", 64)); err == nil {
		t.Fatal("a manifest with another checksum was accepted")
	}
	v, err := OpenVerified(p, sum)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	objs, err := ParseManifest(v)
	if err != nil {
		t.Fatalf("ParseManifest: %v", err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := "Namespace/agent-sandbox-system CustomResourceDefinition/sandboxes.agents.x-k8s.io ServiceAccount/agent-sandbox-controller"
	if strings.Join(got, " ") != want {
		t.Fatalf("objects = %v, want %s", got, want)
	}
	if _, err := ParseYAML([]byte("kind: ConfigMap\nmetadata:\n  name: x\n"), "m.yaml"); err == nil || !strings.Contains(err.Error(), "lacks apiVersion") {
		t.Fatalf("object without apiVersion: %v", err)
	}
}

// `up --dry-run` names the cache file the fetch writes and the directory the extraction makes,
// by the paths and permission bits the run gives them, so the dry run cannot name another.
func TestDescriptionsNameTheFilesTheRunWrites(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	body, _ := os.ReadFile(p)
	srv, _ := server(t, body)
	cache := t.TempDir()
	pin := testArchive
	pin.Artifact = pins.Artifact{URL: srv.URL + "/archive.tar.gz", SHA256: sum}

	d := DescribeArchive(pin, "", cache)
	v, err := (&Fetcher{CacheDir: cache}).FetchArchive(context.Background(), pin, "", archiveSetting)
	if err != nil {
		t.Fatal(err)
	}
	checkDescribedFile(t, d.Files, v.Path())

	state := t.TempDir()
	d = DescribeExtract(state)
	if err := ExtractHelmAfresh(v, pin, filepath.Join(state, HelmDir)); err != nil {
		t.Fatal(err)
	}
	checkDescribedFile(t, d.Files, filepath.Join(state, HelmDir))

	if d := DescribeArchive(pin, p, cache); len(d.Files) != 0 || !strings.Contains(d.Note, p) {
		t.Errorf("a local archive is only verified, yet the dry run says %+v", d)
	}
}

var archiveSetting = option.Setting{Flag: "openshell-archive", Env: "OCC_TEST_ARCHIVE"}

// checkDescribedFile fails unless files is one item naming path, which exists with its mode.
func checkDescribedFile(t *testing.T, files []step.File, path string) {
	t.Helper()
	if len(files) != 1 || files[0].Path != path {
		t.Fatalf("described %+v, the run wrote %s", files, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%04o", fi.Mode().Perm()); got != files[0].Mode || (files[0].Kind == "directory") != fi.IsDir() {
		t.Errorf("described %s %s mode %s; the run made mode %s (directory %v)", files[0].Kind, path, files[0].Mode, got, fi.IsDir())
	}
}
