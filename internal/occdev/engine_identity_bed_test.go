package occdev_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// The socket an environment was made on later answers as another engine: Docker where Podman
// made it (Podman stopped, Docker Desktop took the socket), Podman where Docker made it, or
// another Docker daemon (a reinstalled engine). status, logs, reload and down refuse before they
// read or remove anything, naming both engines and the fix, and the state stays byte for byte:
// through the other engine every object would read as missing, and down would forget the cluster
// as "already gone". With the engine that made it answering, status reads the environment.
func TestAnotherEngineAtTheRecordedSocketIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fl := dockerbed.Flavours()
	current, classic, podman := fl[0].Require(t), fl[1].Require(t), fl[2].Require(t)
	idOf := func(e *dockerbed.Engine) string {
		info, err := e.API.Info(ctx)
		if err != nil || info.ID == "" {
			t.Fatalf("the ID of the engine at %s: %q, %v", e.Host, info.ID, err)
		}
		return info.ID
	}
	currentID, classicID := idOf(current), idOf(classic)
	// write makes a state that recorded engine and, in it, a k3d cluster.
	write := func(t *testing.T, engine state.Engine) (dir string, before []byte) {
		dir = filepath.Join(t.TempDir(), "state")
		d, err := state.Create(dir, state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: k3d.Name, Name: "occ-dev-engine-check"}, Engine: &engine})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Record(k3d.Identity{Name: "occ-dev-engine-check", Owner: d.State().Owner()}.Object()); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		before, err = os.ReadFile(filepath.Join(dir, state.FileName))
		if err != nil {
			t.Fatal(err)
		}
		return dir, before
	}
	for _, tc := range []struct {
		name     string
		recorded state.Engine
		says     []string
	}{
		{"Podman recorded, Docker answers", state.Engine{Kind: state.EnginePodman, Endpoint: current.Host},
			[]string{"made in Podman at " + current.Host + ", but Docker (ID " + currentID + ") answers there now"}},
		{"Docker recorded, Podman answers", state.Engine{Kind: state.EngineDocker, Endpoint: podman.Host, ID: currentID},
			[]string{"made in Docker (ID " + currentID + ") at " + podman.Host + ", but Podman answers there now"}},
		{"another Docker daemon answers", state.Engine{Kind: state.EngineDocker, Endpoint: classic.Host, ID: currentID},
			[]string{"made in Docker (ID " + currentID + ") at " + classic.Host + ", but Docker (ID " + classicID + ") answers there now"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, before := write(t, tc.recorded)
			says := append(tc.says, "make the socket serve the engine the environment was made in", "the state in "+dir+" is kept")
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s read the environment through another engine", what)
					return
				}
				for _, s := range says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: %v\nwant it to say %q", what, err, s)
					}
				}
			}
			_, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
			check("status", err)
			check("logs", observe.Logs(ctx, observe.LogsOptions{StateDir: dir, Tail: -1, Out: &bytes.Buffer{}}))
			_, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
			check("reload", err)
			_, err = occdev.Down(ctx, occdev.DownOptions{StateDir: dir})
			check("down", err)
			after, err := os.ReadFile(filepath.Join(dir, state.FileName))
			if err != nil || !bytes.Equal(after, before) {
				t.Errorf("the state changed (%v):\nbefore %s\nafter  %s", err, before, after)
			}
		})
	}
	t.Run("the engine that made it answers", func(t *testing.T) {
		dir, _ := write(t, state.Engine{Kind: state.EngineDocker, Endpoint: current.Host, ID: currentID})
		st, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
		if err != nil || st.ClusterState != observe.ClusterMissing {
			t.Fatalf("status through the engine that made it: %+v, %v; want the cluster read as missing", st, err)
		}
		if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir}); err != nil {
			t.Fatalf("down through the engine that made it: %v", err)
		}
	})
}
