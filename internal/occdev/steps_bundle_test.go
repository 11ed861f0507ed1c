package occdev

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
	"github.com/openclaw/occ/internal/progress"
)

// A bundle that is not there, one given for a cluster occ does not create, or one given with a
// node image selected by tag (a bundle holds images by digest) is a bad setting refused before
// anything runs, naming the flag, its variable, the value and the fix; a bundle given by a
// relative path is planned by its absolute one (the state records it so).
func TestBundleSettings(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sock := dockerAt("unix:///run/user/1000/docker.sock")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.tar"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		o    UpOptions
		want string
	}{
		{UpOptions{Bundle: "absent.tar"}, `--bundle (OCC_DEVELOPMENT_BUNDLE) "absent.tar" does not exist`},
		{UpOptions{Bundle: ".", ClusterProvider: ProviderExisting}, `--bundle (OCC_DEVELOPMENT_BUNDLE) "." is not a regular file`},
		{UpOptions{Bundle: "b.tar", ClusterProvider: ProviderExisting}, "--cluster-provider existing pulls them in its own nodes"},
		{UpOptions{Bundle: "b.tar", K3sImage: "docker.io/rancher/k3s:v1.35.8-k3s1"}, `OCC_DEVELOPMENT_K3S_IMAGE "docker.io/rancher/k3s:v1.35.8-k3s1" is a tag, and a bundle holds images by digest`},
	} {
		tc.o.Docker = sock
		_, err := resolvePlan(tc.o)
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an option error with %q", tc.o, err, tc.want)
		}
	}
	p, err := resolvePlan(UpOptions{Bundle: "b.tar", Offline: true, Docker: sock})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bundle != filepath.Join(dir, "b.tar") || !p.Offline {
		t.Errorf("plan bundle %q offline %v", p.Bundle, p.Offline)
	}
	if s := p.selections(); s == nil || s.Bundle != p.Bundle || !s.Offline {
		t.Errorf("selections %+v", s)
	}
}

// Offline, the engine refuses whatever would reach a registry through it, naming the image.
func TestOfflineEngineRefusesPullsAndLookups(t *testing.T) {
	api := docker.Offline(nil)
	var off *docker.OfflineError
	if _, err := api.ImagePull(t.Context(), "example.com/a@sha256:1", image.PullOptions{}); !errors.As(err, &off) || !strings.Contains(err.Error(), "example.com/a@sha256:1") {
		t.Errorf("pull: %v", err)
	}
	if _, err := api.DistributionInspect(t.Context(), "example.com/a:v1", ""); !errors.As(err, &off) || !strings.Contains(err.Error(), "a registry lookup of image example.com/a:v1") {
		t.Errorf("lookup: %v", err)
	}
}

// A bundle is checked against what this up takes from it before anything exists: a pin the
// bundle was not made with is named by its digest; the bundle's own pins pass, and then each
// pinned image is loaded from it.
func TestOpenBundleChecksWhatUpTakesFromIt(t *testing.T) {
	w := onlinetest.NewWorld(t, "", "")
	out := filepath.Join(t.TempDir(), "bundle.tar")
	if _, err := pinbundle.Create(t.Context(), pinbundle.CreateOptions{Pins: w.Set, Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}, Out: out}); err != nil {
		t.Fatal(err)
	}
	amd64 := images.Platform{OS: "linux", Architecture: "amd64"}
	open := func(set *pins.Set) error {
		r := &run{plan: &Plan{Bundle: out, pins: set}, enginePlatform: amd64}
		defer r.close()
		if err := openBundle(t.Context(), r, progress.Reporter{}); err != nil {
			return err
		}
		for slot, img := range images.Pinned(set) {
			if a := r.bundle.Archive(images.Slot(slot)); a == nil || a.From != "bundle "+out {
				t.Errorf("the %s image is not loaded from the bundle: %+v", img.Title, a)
			}
		}
		return nil
	}
	if err := open(w.Set); err != nil {
		t.Fatalf("the bundle's own pins: %v", err)
	}
	other := *w.Set
	other.OpenShell.Images.Sandbox.Digest = "sha256:" + strings.Repeat("5", 64)
	var missing *pinbundle.MissingError
	if err := open(&other); !errors.As(err, &missing) || missing.Digest != other.OpenShell.Images.Sandbox.Digest {
		t.Errorf("a pin the bundle lacks: %v", err)
	}
}
