package occdev

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/docker"
)

// A bundle that is not there, or one given for a cluster occ does not create, is a bad setting
// refused before anything runs, naming the flag, its variable, the value and the fix; a bundle
// given by a relative path is planned by its absolute one (the state records it so).
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
