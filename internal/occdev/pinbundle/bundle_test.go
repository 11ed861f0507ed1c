package pinbundle

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
	"github.com/openclaw/occ/internal/progress"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
)

// routedWorld serves a complete routed pin set: every image a two-platform index with an
// attestation entry (the k3d tools image as a Docker manifest list, the others OCI indexes),
// the routing controllers' images recorded from their manifests, and the downloads on a file
// server. The set has been through a pin file.
func routedWorld(t *testing.T) (*onlinetest.World, *pins.Set) {
	t.Helper()
	w, _ := onlinetest.RoutingWorld(t, "../platform/testdata/routing", false)
	tools := w.Set.K3d.ToolsImage
	w.Set.K3d.ToolsImage.Digest, _ = w.Reg.PushDockerList(t, tools.Repository+":"+tools.Tag, onlinetest.AMD64, onlinetest.ARM64)
	rr, err := online.ResolveRouting(context.Background(), w.Set, online.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := pins.Encode(rr.Set, "test pins")
	if err != nil {
		t.Fatal(err)
	}
	set, err := pins.Parse(data, "test pins")
	if err != nil {
		t.Fatal(err)
	}
	return w, set
}

// readTar returns every entry of the tar at path by name.
func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
}

func blobName(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

// An engineer bundles the routed pins for a plane: every artifact lands in one file, each image
// as its pinned index with both platforms' content and no attestation content; inspect reads the
// pins back and says they are not the built-in ones; verify passes; the partial directory is gone.
func TestCreateInspectVerify(t *testing.T) {
	w, set := routedWorld(t)
	out := filepath.Join(t.TempDir(), "bundle.tar")
	var steps []string
	sink := func(e progress.Event) {
		if e.Kind == progress.End {
			steps = append(steps, e.Step)
		}
	}
	c, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64, arm64}, Out: out, Progress: sink})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PartialDir(out)); !os.IsNotExist(err) {
		t.Errorf("the partial directory is left behind: %v", err)
	}
	if len(c.Artifacts) != 15 || len(steps) != 17 {
		t.Fatalf("%d artifacts in %d steps, want 15 (archive, 5 images, Agent Sandbox, 2 routing manifests, 6 routing images) in 17", len(c.Artifacts), len(steps))
	}
	entries := readTar(t, out)
	for _, name := range []string{LayoutFile, IndexFile, ContentsFile, blobName(c.Pins.Digest)} {
		if _, ok := entries[name]; !ok {
			t.Errorf("the bundle lacks %s", name)
		}
	}
	for _, a := range c.Artifacts {
		blob, ok := entries[blobName(a.Digest)]
		if !ok {
			t.Errorf("%s %s is not a blob", a.Pin, a.Digest)
			continue
		}
		if a.Kind != KindImage {
			continue
		}
		if len(a.Platforms) != 2 || a.Platforms[0].Platform != "linux/amd64" || a.Platforms[1].Platform != "linux/arm64/v8" {
			t.Errorf("%s platforms %+v", a.Pin, a.Platforms)
		}
		if want := types.OCIImageIndex; a.Pin == pins.KeyK3dToolsImage {
			if a.MediaType != string(types.DockerManifestList) {
				t.Errorf("k3d tools media type %s, want the manifest list the registry serves", a.MediaType)
			}
		} else if a.MediaType != string(want) {
			t.Errorf("%s media type %s", a.Pin, a.MediaType)
		}
		idx, err := v1.ParseIndexManifest(bytes.NewReader(blob))
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.Manifests) != 3 {
			t.Errorf("%s: the index has %d entries; the registry's index (with its attestation) has 3", a.Pin, len(idx.Manifests))
		}
		for _, d := range idx.Manifests {
			if _, held := entries[blobName(d.Digest.String())]; held == (d.Platform.OS == "unknown") {
				t.Errorf("%s: entry %s (%s) held %v", a.Pin, d.Digest, platformString(*d.Platform), held)
			}
		}
	}
	var canonical []byte
	if canonical, err = set.Canonical(); err != nil || !bytes.Equal(entries[blobName(c.Pins.Digest)], canonical) {
		t.Errorf("the pin set blob is not the canonical encoding (%v)", err)
	}

	in, err := Inspect(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := set.Digest()
	builtIn, _ := pins.Default()
	builtInDigest, _ := builtIn.Digest()
	if in.Pins.Digest != want || in.Pins.Source != set.SourceName() || in.BuiltIn || in.BuiltInDigest != builtInDigest || len(in.Artifacts) != 15 {
		t.Errorf("inspect: %+v", in)
	}
	if _, err := Verify(context.Background(), out, nil); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: out}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second create over the bundle: %v", err)
	}
	_ = w
}

// A create on a train's Wi-Fi is cut off after the first OpenShell image: the next run fetches
// none of the blobs the first one verified (no request for them reaches the registry, the
// archive is not downloaded again) except one damaged on disk meanwhile, and writes a bundle
// that verifies.
func TestCreateResumesAfterAnInterruption(t *testing.T) {
	w, set := routedWorld(t)
	out := filepath.Join(t.TempDir(), "bundle.tar")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := func(e progress.Event) {
		if e.Kind == progress.End && strings.HasPrefix(e.Step, "fetch "+pins.KeyGatewayImage+" ") {
			cancel()
		}
	}
	_, err := Create(ctx, CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: out, Progress: stop})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run the same create again to resume: "+PartialDir(out)) {
		t.Fatalf("the interrupted create: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("an interrupted create left %s: %v", out, err)
	}
	kept, err := os.ReadDir(filepath.Join(PartialDir(out), "blobs", "sha256"))
	if err != nil || len(kept) < 8 {
		t.Fatalf("the partial directory keeps %d blobs (%v); the archive, 5+6 indexes and the gateway's manifest, config and layer were fetched", len(kept), err)
	}
	before := map[string]int{}
	for _, k := range kept {
		before[k.Name()] = w.Reg.RequestsFor(k.Name())
	}
	// A kept blob that no longer hashes to its name (a disk error) is fetched again.
	damaged := strings.TrimPrefix(set.OpenShell.Images.Sandbox.Digest, "sha256:")
	if err := os.WriteFile(filepath.Join(PartialDir(out), "blobs", "sha256", damaged), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	archiveHits := w.Files.Hits()
	if _, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: out}); err != nil {
		t.Fatal(err)
	}
	for name, n := range before {
		if again := w.Reg.RequestsFor(name) - n; name == damaged && again != 1 {
			t.Errorf("the damaged blob %s was requested %d time(s), want once", name, again)
		} else if name != damaged && again != 0 {
			t.Errorf("blob %s, verified by the first run, was requested %d more time(s)", name, again)
		}
	}
	if hits := w.Files.Hits() - archiveHits; hits != 3 {
		t.Errorf("the second run made %d downloads; only the Agent Sandbox and two routing manifests were missing", hits)
	}
	if _, err := Verify(context.Background(), out, nil); err != nil {
		t.Errorf("verify the resumed bundle: %v", err)
	}
}

// A bundle for Apple Silicon is asked of pins whose k3s index holds only linux/amd64: create
// refuses before any layer is downloaded, naming the pin, the image and the platform; a pin
// that is a single-platform manifest is refused too.
func TestCreateRefusesWhatThePinsCannotServe(t *testing.T) {
	w, set := routedWorld(t)
	k3s := set.K3s.Image
	set.K3s.Image.Digest, _ = w.Reg.PushIndex(t, k3s.Repository+":"+k3s.Tag, onlinetest.AMD64)
	out := filepath.Join(t.TempDir(), "bundle.tar")
	blobRequests := w.Reg.RequestsFor("/blobs/")
	_, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{arm64}, Out: out})
	if err == nil || !strings.Contains(err.Error(), "k3s.image "+set.K3s.Image.String()+" has no linux/arm64 image (its index holds linux/amd64); choose the platforms it has with --platform") {
		t.Fatalf("a missing platform: %v", err)
	}
	if n := w.Reg.RequestsFor("/blobs/") - blobRequests; n != 0 {
		t.Errorf("%d blob requests before the refusal", n)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused create wrote %s", out)
	}

	set.K3s.Image.Digest = w.Reg.PushImage(t, k3s.Repository+":"+k3s.Tag, onlinetest.AMD64)
	_, err = Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: out})
	if err == nil || !strings.Contains(err.Error(), "k3s.image "+set.K3s.Image.String()+" is a "+string(types.DockerManifestSchema2)+", not a multi-platform index") {
		t.Errorf("a single-platform pin: %v", err)
	}
}

// bundleWithLayer creates a one-platform bundle and returns it with the k3s node image's layer: its
// digest and where its bytes start in the tar.
func bundleWithLayer(t *testing.T) (path string, set *pins.Set, c *Contents, layer v1.Descriptor, offset int64) {
	t.Helper()
	_, set = routedWorld(t)
	path = filepath.Join(t.TempDir(), "bundle.tar")
	c, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: path})
	if err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, path)
	for _, a := range c.Artifacts {
		if a.Pin == pins.KeyK3sImage {
			m, err := v1.ParseManifest(bytes.NewReader(entries[blobName(a.Platforms[0].Manifest)]))
			if err != nil {
				t.Fatal(err)
			}
			layer = m.Layers[0]
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: bytes.NewReader(data)}
	tr := tar.NewReader(cr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no entry for layer %s: %v", layer.Digest, err)
		}
		if h.Name == blobName(layer.Digest.String()) {
			return path, set, c, layer, cr.n
		}
	}
}

// rewriteTar copies the tar data, each entry's body through edit (nil drops the entry).
func rewriteTar(t *testing.T, data []byte, edit func(name string, body []byte) []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if body = edit(h.Name, body); body == nil {
			continue
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// A bundle copied to a USB stick comes back cut short, with one byte flipped in a layer, or
// without a layer: verify refuses each, naming the pin, its digest and the layer. A bundle
// whose table of contents leaves out a pin of its own pin set is refused naming that pin.
func TestVerifyRefusesDamagedBundles(t *testing.T) {
	path, set, c, layer, offset := bundleWithLayer(t)
	var k3s Artifact
	for _, a := range c.Artifacts {
		if a.Pin == pins.KeyK3sImage {
			k3s = a
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(data)
	flipped[offset+layer.Size/2] ^= 0x01
	without := rewriteTar(t, data, func(name string, body []byte) []byte {
		if name == blobName(layer.Digest.String()) {
			return nil
		}
		return body
	})
	unlisted := rewriteTar(t, data, func(name string, body []byte) []byte {
		if name != ContentsFile {
			return body
		}
		var c Contents
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		c.Artifacts = slices.DeleteFunc(c.Artifacts, func(a Artifact) bool { return a.Pin == pins.KeyAgentSandbox })
		out, _ := json.Marshal(c)
		return out
	})
	what := "k3s.image " + k3s.Digest + " (linux/amd64 layer " + layer.Digest.String() + "): "
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"truncated":                      {data[:offset+layer.Size/2], what + "the file ends inside this blob"},
		"tampered":                       {flipped, what + "the blob's bytes hash to sha256:"},
		"incomplete":                     {without, what + "the blob is missing: the bundle is incomplete"},
		"a pin left out of its contents": {unlisted, "agentSandbox.manifest sha256:" + set.AgentSandbox.Manifest.SHA256 + " (" + set.AgentSandbox.Manifest.URL + "): a pin of the bundle's pin set that the bundle does not list"},
	} {
		bad := filepath.Join(t.TempDir(), name+".tar")
		if err := os.WriteFile(bad, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Verify(context.Background(), bad, nil)
		var perr *ProblemError
		if !errors.As(err, &perr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s bundle: %v", name, err)
		}
	}
}

// The bundle's table of contents is what inspect prints as JSON: it round-trips.
func TestContentsRoundTrip(t *testing.T) {
	c := Contents{SchemaVersion: 1, Pins: PinSet{Digest: strings.Repeat("a", 64), Source: "built in"}, Platforms: []string{"linux/amd64"},
		Artifacts: []Artifact{{Pin: pins.KeyK3sImage, Kind: KindImage, Reference: "r", Digest: "sha256:" + strings.Repeat("b", 64), Size: 3, Platforms: []Platform{{Platform: "linux/amd64", Manifest: "m"}}}}}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeContents(bytes.NewReader(data), "x")
	if err != nil || got.Artifacts[0].Platforms[0].Manifest != "m" {
		t.Errorf("%v %+v", err, got)
	}
}

// Someone without occ unpacks the bundle and hands it to a tool that reads OCI image layouts
// (go-containerregistry's layout package, as crane does): every pinned image is found by its
// pinned digest and its chosen platform's image reads whole, layers included.
func TestTheBundleIsAnOCIImageLayout(t *testing.T) {
	_, set := routedWorld(t)
	out := filepath.Join(t.TempDir(), "bundle.tar")
	c, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{arm64}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range readTar(t, out) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Artifacts {
		if a.Kind != KindImage {
			continue
		}
		h, _ := v1.NewHash(a.Digest)
		idx, err := root.ImageIndex(h)
		if err != nil {
			t.Fatalf("%s: %v", a.Pin, err)
		}
		if got, err := idx.Digest(); err != nil || got != h {
			t.Errorf("%s: the index's digest is %s (%v), the pin's %s", a.Pin, got, err, h)
		}
		mh, _ := v1.NewHash(a.Platforms[0].Manifest)
		img, err := idx.Image(mh)
		if err != nil {
			t.Fatalf("%s: %v", a.Pin, err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != "arm64" {
			t.Errorf("%s: config %v (%v)", a.Pin, cf, err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) == 0 {
			t.Fatalf("%s: %d layers (%v)", a.Pin, len(layers), err)
		}
		for _, l := range layers {
			want, _ := l.Digest()
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := v1.SHA256(rc)
			rc.Close()
			if err != nil || got != want {
				t.Errorf("%s: layer %s reads as %s (%v)", a.Pin, want, got, err)
			}
		}
	}
}
