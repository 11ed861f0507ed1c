package pinbundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pickArch picks the first index entry of arch.
func pickArch(arch string) func([]v1.Descriptor) int {
	return func(ds []v1.Descriptor) int {
		for i, d := range ds {
			if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
				return i
			}
		}
		return -1
	}
}

// up --bundle takes one image out of the bundle as an archive an engine loads: read back as an
// OCI layout it is the pinned index (same digest) followed to the chosen platform's whole image;
// read back as a docker-archive it is the same config and layers. A platform the bundle was not
// made for is refused naming its manifest, the first digest the bundle lacks, and a file comes out byte for byte.
func TestAnImageLeavesTheBundleAsALoadableArchive(t *testing.T) {
	_, set := routedWorld(t)
	out := filepath.Join(t.TempDir(), "bundle.tar")
	c, err := Create(context.Background(), CreateOptions{Pins: set, Platforms: []v1.Platform{amd64}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	o, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Contents.Pins.Digest != c.Pins.Digest {
		t.Errorf("open read pins %s, create wrote %s", o.Contents.Pins.Digest, c.Pins.Digest)
	}
	pin := set.OpenShell.Images.Gateway
	img, err := o.Image(pin.Name(), pin.Digest, pickArch("amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if img.Index.Digest.String() != pin.Digest || img.Manifest.Platform.Architecture != "amd64" || len(img.Layers) == 0 {
		t.Fatalf("image %+v", img)
	}
	var archive bytes.Buffer
	if err := o.WriteArchive(&archive, img); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	entries := untar(t, archive.Bytes(), dir)
	if entries[IndexFile] == nil || entries["manifest.json"] == nil {
		t.Fatalf("archive entries: %d, lacking index.json or manifest.json", len(entries))
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil || len(rm.Manifests) != 1 || rm.Manifests[0].Digest.String() != pin.Digest ||
		rm.Manifests[0].Annotations[AnnotationImageName] != pin.Name()+"@"+pin.Digest {
		t.Fatalf("index.json %+v (%v)", rm, err)
	}
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	fromLayout, err := idx.Image(img.Manifest.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fromLayout.Layers(); err != nil {
		t.Fatal(err)
	}
	archivePath := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(archivePath, archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fromDocker, err := tarball.ImageFromPath(archivePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := fromDocker.ConfigName(); err != nil || name != img.Config.Digest {
		t.Errorf("docker-archive config %s (%v), want %s", name, err, img.Config.Digest)
	}
	for _, l := range must(fromDocker.Layers()) {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := v1.SHA256(rc)
		rc.Close()
		if want := must(l.Digest()); err != nil || got != want {
			t.Errorf("docker-archive layer %s reads as %s (%v)", want, got, err)
		}
	}

	_, err = o.Image(pin.Name(), pin.Digest, pickArch("arm64"))
	var missing *MissingError
	if !errors.As(err, &missing) || missing.Digest == pin.Digest || !strings.Contains(missing.What, "linux/arm64") {
		t.Errorf("arm64 from an amd64 bundle: %v", err)
	}
	var file bytes.Buffer
	sum := set.AgentSandbox.Manifest.SHA256
	if _, err := o.CopyFile(&file, sum); err != nil || hexSum(file.Bytes()) != sum {
		t.Errorf("the Agent Sandbox manifest comes out as %d bytes (%v)", file.Len(), err)
	}
	if _, err := o.Image("example.com/absent", "sha256:"+strings.Repeat("0", 64), pickArch("amd64")); !errors.As(err, &missing) {
		t.Errorf("an image the bundle lacks: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// untar writes the entries of the tar data under dir and returns them by name.
func untar(t *testing.T, data []byte, dir string) map[string][]byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.tar")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := readTar(t, path)
	for name, body := range out {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
