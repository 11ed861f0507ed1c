package occdev_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// recordedEnvironment writes the record of a Compose environment `up` made on engine, with
// the k3d cluster name, a fixture checkout and, when builds is set, the build record, and
// returns the state directory.
func recordedEnvironment(t *testing.T, engine, name string, builds bool, selected bool) string {
	t.Helper()
	dir := filepath.Join(privateDir(t), "state")
	checkout := ocebed.Checkout(t, fixtureCommit)
	d, err := state.Create(dir, state.State{
		Profile: "compose", Engine: &state.Engine{Endpoint: engine},
		Cluster: state.Cluster{Provider: "k3d", Name: name, Kubeconfig: filepath.Join(dir, "kubeconfig"), Context: "k3d-" + name},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	owner := d.State().Owner()
	if err := d.Record(state.Object{Type: k3d.TypeCluster, Name: name, Labels: map[string]string{"k3d.cluster": name, k3d.OwnerLabel: owner}}); err != nil {
		t.Fatal(err)
	}
	img := state.ControlPlaneImage{Role: "development", Reference: "occ-refusal-development", ID: "sha256:" + strings.Repeat("0", 64), Selected: selected}
	if err := d.Update(func(s *state.State) {
		s.ControlPlane = &state.ControlPlane{Checkout: checkout, Commit: fixtureCommit, Images: []state.ControlPlaneImage{img}}
	}); err != nil {
		t.Fatal(err)
	}
	if builds {
		rec := `[{"role":"development","services":["controller"],"context":"` + checkout + `","dockerfile":"Dockerfile","target":"development","tag":"occ-refusal-development"}]`
		if err := os.WriteFile(filepath.Join(dir, "builds.json"), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A developer runs `occ dev reload` on an environment it cannot act on — its Docker engine is
// gone (Docker Desktop quit, another socket), its k3d cluster was deleted by hand, it was
// brought up by an occ that recorded no builds, its images were selected by digest, or it runs
// on an existing cluster occ imports nothing into — and is told why and to run `occ dev down`
// and `occ dev up`; nothing is built.
func TestReloadRefusesWhatItCannotAct(t *testing.T) {
	ctx := context.Background()
	gone := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	for _, tc := range []struct {
		name, why string
		dir       func(t *testing.T) string
	}{
		{"the engine is gone", "its Docker engine does not answer", func(t *testing.T) string {
			return recordedEnvironment(t, gone, "occ-dev-refusal00", true, false)
		}},
		{"the cluster is gone", "its k3d cluster occ-dev-refusal01 is gone", func(t *testing.T) string {
			return recordedEnvironment(t, dockerbed.Require(t).Host, "occ-dev-refusal01", true, false)
		}},
		{"no build record", "it records no builds", func(t *testing.T) string {
			return recordedEnvironment(t, gone, "occ-dev-refusal02", false, false)
		}},
		{"selected images", "its controller and Agent runtime images were selected by digest", func(t *testing.T) string {
			return recordedEnvironment(t, gone, "occ-dev-refusal03", true, true)
		}},
		{"an existing cluster", "its cluster is not one occ created with k3d, which the rebuilt images are imported into", func(t *testing.T) string {
			dir := recordedEnvironment(t, gone, "occ-dev-refusal04", true, false)
			d, err := state.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Update(func(s *state.State) { s.Cluster.Provider = occdev.ProviderExisting }); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			_, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
			if err == nil || !strings.Contains(err.Error(), "cannot reload the environment recorded in "+dir+": "+tc.why) ||
				!strings.Contains(err.Error(), "occ dev down --state-dir "+dir) || !strings.Contains(err.Error(), "occ dev up") {
				t.Errorf("reload: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "image-build.log")); err == nil {
				t.Error("a refused reload built something")
			}
		})
	}
}
