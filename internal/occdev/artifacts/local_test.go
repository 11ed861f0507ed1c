package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// memLocal is a store of artifacts by sha256, as a bundle is.
type memLocal map[string][]byte

func (m memLocal) Has(digest string) bool {
	_, ok := m[strings.TrimPrefix(digest, "sha256:")]
	return ok
}
func (m memLocal) CopyFile(w io.Writer, sum string) (int64, error) {
	b, ok := m[sum]
	if !ok {
		return 0, fmt.Errorf("no %s", sum)
	}
	return io.Copy(w, bytes.NewReader(b))
}
func (memLocal) Name() string { return "bundle test.tar" }

// On a plane with a bundle, up takes the archive from the bundle: nothing is downloaded, the
// copy is verified into the cache (a later up finds it there without the bundle). A bundle
// blob that does not hash to the pin is discarded, never cached. Offline, an artifact in neither
// the cache nor a bundle is refused naming the URL without its token, and no request is made.
func TestFetchTakesTheBundleAndRefusesOfflineDownloads(t *testing.T) {
	p, sum := archiveFile(t, goodEntries())
	body, _ := os.ReadFile(p)
	srv, hits := server(t, body)
	const canary = "CANARY-bundle-31f0"
	a := pins.Artifact{URL: srv.URL + "/archive.tar.gz?token=" + canary, SHA256: sum}

	cache := t.TempDir()
	f := &Fetcher{CacheDir: cache, Offline: true, Local: memLocal{sum: body}}
	v, err := f.Fetch(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if n := hits.Load(); n != 0 {
		t.Errorf("%d downloads with the archive in the bundle, want 0", n)
	}
	if v, err := (&Fetcher{CacheDir: cache, Offline: true}).Fetch(context.Background(), a); err != nil {
		t.Errorf("the copy was not kept in the cache: %v", err)
	} else {
		v.Close()
	}

	damaged := append(bytes.Clone(body[:len(body)-1]), body[len(body)-1]^1)
	f = &Fetcher{CacheDir: t.TempDir(), Offline: true, Local: memLocal{sum: damaged}}
	var sumErr *ChecksumError
	if _, err := f.Fetch(context.Background(), a); !errors.As(err, &sumErr) {
		t.Errorf("a damaged bundle blob: %v", err)
	}
	if path, _ := f.CachePath(sum); fileExists(path) {
		t.Errorf("the damaged copy was cached at %s", path)
	}

	f = &Fetcher{CacheDir: t.TempDir(), Offline: true}
	_, err = f.Fetch(context.Background(), a)
	var off *OfflineError
	if !errors.As(err, &off) || !strings.Contains(err.Error(), srv.URL+"/archive.tar.gz") || !strings.Contains(err.Error(), "--offline") {
		t.Errorf("offline without the artifact: %v", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("the refusal shows the URL's token: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d downloads offline, want 0", n)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// `occ dev up --dry-run` after an earlier `up` downloaded the Agent Sandbox manifest: the dry run
// reads the cached copy; a missing or tampered copy is no manifest at all (it downloads nothing).
func TestCachedManifestReadsOnlyAVerifiedCopy(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: agent-sandbox-system\n")
	sum := sha256.Sum256(manifest)
	digest := hex.EncodeToString(sum[:])
	f := &Fetcher{CacheDir: t.TempDir()}
	if objs := f.CachedManifest(digest); objs != nil {
		t.Fatalf("empty cache: %d objects", len(objs))
	}
	path, err := f.CachePath(digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	if objs := f.CachedManifest(digest); len(objs) != 1 || objs[0].GetName() != "agent-sandbox-system" {
		t.Errorf("cached copy: %v", objs)
	}
	if err := os.WriteFile(path, append(manifest, '#'), 0o600); err != nil {
		t.Fatal(err)
	}
	if objs := f.CachedManifest(digest); objs != nil {
		t.Errorf("tampered copy read: %v", objs)
	}
}

// A selected manifest is read as up reads it: one that holds no objects, or is missing, is an
// error naming its path; with none selected and nothing cached there is no manifest and no error.
func TestLocalManifestNamesTheSelectedFile(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if objs, err := LocalManifest(good, dir, ""); err != nil || len(objs) != 1 {
		t.Errorf("selected manifest: %v, %v", objs, err)
	}
	if _, err := LocalManifest(empty, dir, ""); err == nil || err.Error() != empty+" holds no objects" {
		t.Errorf("empty manifest: %v", err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := LocalManifest(missing, dir, ""); err == nil || !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("missing manifest: %v", err)
	}
	if objs, err := LocalManifest("", dir, strings.Repeat("0", 64)); objs != nil || err != nil {
		t.Errorf("nothing cached: %v, %v", objs, err)
	}
}

// `occ dev up` without --cache-dir caches under the user's cache directory; with one, there.
func TestCacheDirDefaultsToTheUsersCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/home/dev/.cache")
	if got, err := CacheDir(""); err != nil || got != "/home/dev/.cache/occ/artifacts" {
		t.Errorf("CacheDir(\"\") = %q, %v", got, err)
	}
	if got, err := CacheDir("/srv/cache"); err != nil || got != "/srv/cache" {
		t.Errorf("CacheDir(/srv/cache) = %q, %v", got, err)
	}
}
