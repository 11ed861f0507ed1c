// Package onlinetest serves pins for the tests of `occ dev pins verify` and `resolve`: an
// in-process registry on 127.0.0.1 (go-containerregistry's pkg/registry, optionally behind Basic
// authentication), a file server for archives and manifests, tag archives built the way git
// archive builds them, and a docker config of the test's own.
package onlinetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// testRegistry is go-containerregistry's in-process registry on 127.0.0.1 (which registry
// clients reach over plain HTTP, as they do any loopback registry). With credentials set it
// answers 401 with a Basic challenge to every request that lacks them, as a private registry
// does.
type Registry struct {
	// Host is "127.0.0.1:PORT".
	Host       string
	user, pass string
	mu         sync.Mutex
	requests   int
	paths      []string
}

// RequestsFor counts the requests whose path holds s (a digest: the requests for that manifest
// or blob).
func (r *Registry) RequestsFor(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.paths {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
}

// Requests counts the requests the registry has answered.
func (r *Registry) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// StartRegistry starts a registry for the test; with user set it requires those credentials.
func StartRegistry(t *testing.T, user, pass string) *Registry {
	t.Helper()
	r := &Registry{user: user, pass: pass}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests++
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="occ-test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
				return
			}
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// push writes an image or index under repo:tag with the registry's credentials.
func (r *Registry) push(t *testing.T, repoTag string, v remote.Taggable) {
	t.Helper()
	ref, err := name.NewTag(r.Host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{}
	if r.user != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass}))
	}
	var err2 error
	switch x := v.(type) {
	case v1.ImageIndex:
		err2 = remote.WriteIndex(ref, x, opts...)
	case v1.Image:
		err2 = remote.Write(ref, x, opts...)
	default:
		err2 = remote.Put(ref, v, opts...)
	}
	if err2 != nil {
		t.Fatalf("push %s: %v", ref, err2)
	}
}

// platformImage is a small random image whose config names p.
func platformImage(t *testing.T, p v1.Platform) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// PushImage pushes a single-platform image as repo:tag and returns its manifest digest.
func (r *Registry) PushImage(t *testing.T, repoTag string, p v1.Platform) string {
	t.Helper()
	img := platformImage(t, p)
	r.push(t, repoTag, img)
	return digestOf(t, img)
}

// PushIndex pushes a multi-platform index of one image per platform as repo:tag, and returns
// the index digest and the digest of each platform's manifest. A buildx-style attestation entry
// (platform unknown/unknown) rides along, as in real indexes.
func (r *Registry) PushIndex(t *testing.T, repoTag string, platforms ...v1.Platform) (string, map[string]string) {
	t.Helper()
	return r.pushIndex(t, repoTag, types.OCIImageIndex, platforms)
}

// PushDockerList is PushIndex with the index as a Docker manifest list (what docker buildx
// pushed before OCI indexes, and many registries still serve).
func (r *Registry) PushDockerList(t *testing.T, repoTag string, platforms ...v1.Platform) (string, map[string]string) {
	t.Helper()
	return r.pushIndex(t, repoTag, types.DockerManifestList, platforms)
}

func (r *Registry) pushIndex(t *testing.T, repoTag string, mt types.MediaType, platforms []v1.Platform) (string, map[string]string) {
	t.Helper()
	var adds []mutate.IndexAddendum
	children := map[string]string{}
	for _, p := range platforms {
		img := platformImage(t, p)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		children[platformString(p)] = digestOf(t, img)
	}
	att := platformImage(t, v1.Platform{OS: "unknown", Architecture: "unknown"})
	adds = append(adds, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
		Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"},
	}})
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), mt)
	r.push(t, repoTag, idx)
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String(), children
}

func digestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// The two platforms every pin must serve, as real indexes write them.
var (
	AMD64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	ARM64 = v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
)

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Files serves files by path and counts the requests per path.
type Files struct {
	// URL is the server's base URL.
	URL   string
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

// ServeFiles starts a file server for the test.
func ServeFiles(t *testing.T) *Files {
	t.Helper()
	fs := &Files{files: map[string][]byte{}, hits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		body, ok := fs.files[r.URL.Path]
		fs.hits[r.URL.Path]++
		fs.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	fs.URL = srv.URL
	return fs
}

// Put serves body at path and returns its URL.
func (fs *Files) Put(path string, body []byte) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.files[path] = body
	return fs.URL + path
}

// SHA256 is the hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TagArchive builds a tag tarball the way git archive does: a pax global header whose comment is
// the commit (when commit is not empty), then every entry under top/.
func TagArchive(t *testing.T, top, commit string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if commit != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": commit}}); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: mtime}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + n, Mode: 0o644, Size: int64(len(body)), ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ChartFiles is the v0.1 layout of an OpenShell source tree, reduced to what resolve reads.
func ChartFiles() map[string]string {
	return map[string]string{
		"README.md":                                  "# OpenShell\n",
		"deploy/helm/openshell/Chart.yaml":           "apiVersion: v2\nname: openshell\nversion: 0.1.0\n",
		"deploy/helm/openshell/values.yaml":          "gateway: {}\n",
		"deploy/helm/openshell-workspace/Chart.yaml": "apiVersion: v2\nname: openshell-workspace\nversion: 0.1.0\n",
	}
}

// IsolateDockerConfig gives the test a docker config of its own (and a HOME without one), so
// the registry credentials are exactly the test's: auths maps a registry host to user:pass.
func IsolateDockerConfig(t *testing.T, auths map[string][2]string) {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "docker")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"auths": map[string]any{}}
	for host, up := range auths {
		cfg["auths"].(map[string]any)[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(up[0] + ":" + up[1]))}
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", home)
}

// World is a registry and a download site serving a pin set that verifies completely: every
// image of the embedded set pushed as a linux/amd64 + linux/arm64 index under the same repository
// and tag on the test registry, the source archive and the Agent Sandbox manifest on the file
// server under their real paths.
type World struct {
	Reg   *Registry
	Files *Files
	Set   *pins.Set
}

const (
	// ArchivePath and ManifestPath are where the World serves the pinned downloads.
	ArchivePath  = "/NVIDIA/OpenShell/archive/refs/tags/v0.1.3-pre.2.tar.gz"
	ManifestPath = "/kubernetes-sigs/agent-sandbox/releases/download/v0.5.2/sandbox.yaml"
)

// NewWorld builds a World; with user set its registry requires those credentials.
func NewWorld(t *testing.T, user, pass string) *World {
	t.Helper()
	w := &World{Reg: StartRegistry(t, user, pass), Files: ServeFiles(t)}
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range set.Entries() {
		if e.Image == nil {
			continue
		}
		*e.Image = w.MoveImage(t, *e.Image)
	}
	archive := TagArchive(t, set.OpenShell.SourceArchive.TopDirectory, set.OpenShell.Commit, ChartFiles())
	set.OpenShell.SourceArchive.Artifact = pins.Artifact{URL: w.Files.Put(ArchivePath, archive), SHA256: SHA256(archive)}
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: agent-sandbox-system\n")
	set.AgentSandbox.Manifest = pins.Artifact{URL: w.Files.Put(ManifestPath, manifest), SHA256: SHA256(manifest)}
	for _, c := range set.Routing.Controllers() {
		body := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + c.Version + "\n")
		c.Manifest = pins.Artifact{URL: w.Files.Put("/routing/"+c.Version+"/manifest.yaml", body), SHA256: SHA256(body)}
	}
	set.Source = "test pins"
	w.Set = set
	return w
}

// MoveImage pushes a two-platform index for img's repository and tag and returns the pin of it.
func (w *World) MoveImage(t *testing.T, img pins.Image) pins.Image {
	t.Helper()
	digest, _ := w.Reg.PushIndex(t, img.Repository+":"+img.Tag, AMD64, ARM64)
	return pins.Image{Registry: w.Reg.Host, Repository: img.Repository, Tag: img.Tag, Digest: digest}
}

// Hits counts the requests for each path so far.
func (fs *Files) Hits() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, h := range fs.hits {
		n += h
	}
	return n
}

// ReleaseCommit is the commit of the release Release publishes.
const ReleaseCommit = "5a5e0c1f2d3b4a69788796a5b4c3d2e1f0a9b8c7"

// Release publishes OpenShell version in w: its tag archive at the path GitHub serves it from
// (with the pax comment git archive writes, unless commit is empty) and its three images tagged
// by ReleaseCommit as two-platform indexes. It returns the archive and each image's index digest
// by pin key.
func (w *World) Release(t *testing.T, version, commit string, files map[string]string) ([]byte, map[string]string) {
	t.Helper()
	archive := TagArchive(t, "OpenShell-"+version, commit, files)
	w.Files.Put("/NVIDIA/OpenShell/archive/refs/tags/v"+version+".tar.gz", archive)
	digests := map[string]string{}
	for key, repo := range map[string]string{pins.KeyGatewayImage: "gateway", pins.KeySandboxImage: "sandbox", pins.KeySupervisorImage: "supervisor"} {
		digests[key], _ = w.Reg.PushIndex(t, "nvidia/openshell/"+repo+":"+ReleaseCommit, AMD64, ARM64)
	}
	return archive, digests
}

// RoutingWorld is a World whose routing pins name the platform's stand-ins of the two routing
// manifests (internal/occdev/platform/testdata/routing, which dir names relative to the calling
// test's package), their images moved to the test registry, each pushed as a two-platform index
// (the rate-limit image as a single-platform image when single is set); the pins record no image
// yet. It returns the World and each image's digest by its repository:tag in the registry.
func RoutingWorld(t *testing.T, dir string, single bool) (*World, map[string]string) {
	t.Helper()
	IsolateDockerConfig(t, nil)
	w := NewWorld(t, "", "")
	digests := map[string]string{}
	refs := map[string]string{
		"quay.io/jetstack/cert-manager-controller:v1.18.4": "jetstack/cert-manager-controller:v1.18.4",
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4": "jetstack/cert-manager-cainjector:v1.18.4",
		"quay.io/jetstack/cert-manager-webhook:v1.18.4":    "jetstack/cert-manager-webhook:v1.18.4",
		"quay.io/jetstack/cert-manager-acmesolver:v1.18.4": "jetstack/cert-manager-acmesolver:v1.18.4",
		"docker.io/envoyproxy/gateway:v1.6.7":              "envoyproxy/gateway:v1.6.7",
		"docker.io/envoyproxy/ratelimit:99d85510":          "envoyproxy/ratelimit:99d85510",
	}
	var swaps []string
	for from, to := range refs {
		if single && strings.Contains(to, "ratelimit") {
			digests[to] = w.Reg.PushImage(t, to, AMD64)
		} else {
			digests[to], _ = w.Reg.PushIndex(t, to, AMD64, ARM64)
		}
		swaps = append(swaps, from, w.Reg.Host+"/"+to)
	}
	for _, c := range w.Set.Routing.Controllers() {
		name := "cert-manager.yaml"
		if c.Key == pins.KeyRoutingEnvoyGateway {
			name = "envoy-gateway.yaml"
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(strings.NewReplacer(swaps...).Replace(string(data)))
		c.Manifest = pins.Artifact{URL: w.Files.Put("/routing/"+name, body), SHA256: SHA256(body)}
	}
	return w, digests
}
