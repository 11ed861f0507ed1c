package pinbundle

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/system"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

// storeAPI is an engine that answers docker info with its image store's driver type.
type storeAPI struct {
	docker.API
	driverType string
}

func (s storeAPI) Info(context.Context) (system.Info, error) {
	return system.Info{DriverStatus: [][2]string{{"driver-type", s.driverType}}}, nil
}

// up --bundle checks the bundle against what it takes from it before anything exists: the
// bundle's own pins pass, each image then leaving it as the archive the engine loads for its
// slot; a pin or a download the bundle was not made with is named by its digest, unless a local
// file replaces that download; a node image selected by tag cannot come from it; and a Docker
// engine on its classic image store, which names a loaded image by its config alone, is refused
// as a bad setting.
func TestTakeChecksWhatUpTakesFromIt(t *testing.T) {
	w := onlinetest.NewWorld(t, "", "")
	out := filepath.Join(t.TempDir(), "bundle.tar")
	if _, err := Create(t.Context(), CreateOptions{Pins: w.Set, Platforms: []v1.Platform{amd64}, Out: out}); err != nil {
		t.Fatal(err)
	}
	opts := func(set *pins.Set) TakeOptions {
		return TakeOptions{Path: out, Setting: "--bundle", Pins: set, Platform: images.Platform{OS: "linux", Architecture: "amd64"}}
	}
	take := func(o TakeOptions) error {
		b, err := Take(t.Context(), o)
		if err == nil {
			b.Close()
		}
		return err
	}

	b, err := Take(t.Context(), opts(w.Set))
	if err != nil {
		t.Fatalf("the bundle's own pins: %v", err)
	}
	defer b.Close()
	if s := b.Summary(); !strings.HasPrefix(s, "bundle "+out+" verified: pins ") || !strings.Contains(s, "[linux/amd64]") {
		t.Errorf("summary %q", s)
	}
	for slot, img := range images.Pinned(w.Set) {
		a := b.Archive(images.Slot(slot))
		var buf bytes.Buffer
		if err := a.Write(&buf); err != nil || a.From != "bundle "+out || int64(buf.Len()) < a.Size {
			t.Errorf("the archive of %s: %v, from %q, %d bytes of %d", img.Title, err, a.From, buf.Len(), a.Size)
		}
	}
	if (*Taken)(nil).Archive(0) != nil {
		t.Error("no bundle gave an archive")
	}

	other := *w.Set
	other.OpenShell.Images.Sandbox.Digest = "sha256:" + strings.Repeat("5", 64)
	var missing *MissingError
	if err := take(opts(&other)); !errors.As(err, &missing) || missing.Digest != other.OpenShell.Images.Sandbox.Digest || !strings.Contains(err.Error(), "OpenShell Sandbox image") {
		t.Errorf("a pin the bundle lacks: %v", err)
	}
	manifest := *w.Set
	manifest.AgentSandbox.Manifest.SHA256 = strings.Repeat("6", 64)
	if err := take(opts(&manifest)); !errors.As(err, &missing) || missing.Digest != "sha256:"+strings.Repeat("6", 64) || !strings.Contains(err.Error(), "the Agent Sandbox manifest http") {
		t.Errorf("a download the bundle lacks: %v", err)
	}
	local := opts(&manifest)
	local.Local = []string{pins.KeyAgentSandbox}
	if err := take(local); err != nil {
		t.Errorf("a download replaced by a local file: %v", err)
	}
	tagged := *w.Set
	tagged.K3s.Image.Digest = ""
	if err := take(opts(&tagged)); err == nil || !strings.Contains(err.Error(), "is a tag, and a bundle holds images by digest") {
		t.Errorf("a node image by tag: %v", err)
	}

	classic := opts(w.Set)
	classic.Docker, classic.Endpoint = (&docker.Engine{API: storeAPI{driverType: "overlay2"}, Identity: engine.Identity{Kind: engine.Docker}}).Verbs(), "unix:///run/docker.sock"
	var oe *option.Error
	if err := take(classic); !errors.As(err, &oe) || oe.Option != "--bundle" || !strings.Contains(err.Error(), "the Docker engine at unix:///run/docker.sock keeps images in its classic store") {
		t.Errorf("a Docker engine on the classic store: %v", err)
	}
	containerd := opts(w.Set)
	containerd.Docker = (&docker.Engine{API: storeAPI{driverType: "io.containerd.snapshotter.v1"}, Identity: engine.Identity{Kind: engine.Docker}}).Verbs()
	if err := take(containerd); err != nil {
		t.Errorf("a Docker engine on the containerd store: %v", err)
	}
}
