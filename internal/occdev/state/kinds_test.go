package state_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	// The root links every layer the binary does, so the kinds registered here are the binary's.
	_ "github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { state.SetRefOf(kubeobj.RefOf) }

// Every layer that records something registers its kind: the nine record types occ writes
// are known, each under the on-disk name its records carry, and the names earlier releases
// wrote per engine are aliases of the type named by what the record is.
func TestEveryRecordedTypeIsRegistered(t *testing.T) {
	want := []state.Type{
		kubeobj.TypeObject, helmrelease.TypeRelease, k3d.TypeCluster, images.TypePulledImage, images.TypeClusterImage,
		images.TypeBuildHold, compose.TypeNetwork, compose.TypeVolume, compose.TypeProject, compose.TypeServices,
	}
	names := []string{"kubernetes", "helm-release", "k3d-cluster", "pulled-image", "cluster-image", "build-hold", "network", "volume", "compose-project", "compose-services"}
	for i, typ := range want {
		if string(typ) != names[i] {
			t.Errorf("record type %q is written as %q on disk; a renamed type would orphan every existing record", names[i], typ)
		}
	}
	got := state.Kinds()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("registered kinds %v, want %v", got, want)
	}
	for typ, old := range map[state.Type][]state.Type{
		images.TypePulledImage: {"docker-image", "podman-image"},
		compose.TypeNetwork:    {"docker-network", "podman-network"},
		compose.TypeVolume:     {"docker-volume", "podman-volume"},
	} {
		if k, _ := state.KindOf(typ); !slices.Equal(k.Aliases, old) {
			t.Errorf("record type %s reads the earlier names %v, want %v", typ, k.Aliases, old)
		}
	}
}

// Every record kind a binary links (the root imported here links them all) has a Remover,
// registered by its layer with its place in the order of removal: a record no remover knows
// would be kept by every down for ever.
func TestEveryRecordKindHasARemover(t *testing.T) {
	c := state.Connect(state.State{})
	reg := c.Removers()
	for _, typ := range state.Kinds() {
		if reg[typ] == nil {
			t.Errorf("record type %s has no Remover", typ)
		}
	}
	for typ, want := range map[state.Type]state.Order{
		compose.TypeServices: state.QuiescedFirst, k3d.TypeCluster: state.TheCluster, kubeobj.TypeObject: state.InsideCluster,
		helmrelease.TypeRelease: state.InsideCluster, images.TypeClusterImage: state.SideBySide, compose.TypeVolume: state.InReverse,
	} {
		if got := state.OrderOf(typ); got != want {
			t.Errorf("record type %s is removed in order %d, want %d", typ, got, want)
		}
	}
}

// readState writes data as the state.json of a fresh state directory and reads it back as
// `down` does.
func readState(t *testing.T, data []byte) (dir string, s state.State) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "occ-dev")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, state.MarkerName), []byte(state.MarkerContent), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, state.FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = state.Read(dir)
	if err != nil {
		t.Fatalf("read the state: %v", err)
	}
	return dir, s
}

// olderNames are the record types earlier releases wrote per engine, each with the type it
// reads as now.
var olderNames = map[string]state.Type{
	"docker-image": images.TypePulledImage, "podman-image": images.TypePulledImage,
	"docker-network": compose.TypeNetwork, "podman-network": compose.TypeNetwork,
	"docker-volume": compose.TypeVolume, "podman-volume": compose.TypeVolume,
}

// A developer upgrades occ while an environment made before the record types were named by
// what they are is up, on Docker or on Podman: every record of an engine type's old name loads
// as the type's new name, knows its engine from the state, is described by that engine's name
// as before, and `down` finds a Remover for it, in the same place of the order of removal.
func TestStateWithPerEngineTypeNamesStillLoads(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "state-v2-1e50d89.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The Podman state is the Docker one as a release that knew Podman wrote it on Podman.
	onPodman := strings.NewReplacer(`"docker-image"`, `"podman-image"`, `"docker-network"`, `"podman-network"`, `"docker-volume"`, `"podman-volume"`,
		`"endpoint": "unix:///var/run/docker.sock"`, `"kind": "podman",
    "endpoint": "unix:///run/user/1000/podman/podman.sock"`).Replace(string(golden))
	for _, c := range []struct {
		engine, name, data string
		old                []string
	}{
		{"", "Docker", string(golden), []string{"docker-image", "docker-network", "docker-volume"}},
		{state.EnginePodman, "Podman", onPodman, []string{"podman-image", "podman-network", "podman-volume"}},
	} {
		for _, old := range c.old {
			if !strings.Contains(c.data, `"type": "`+old+`"`) {
				t.Fatalf("the %s state has no %s record", c.name, old)
			}
		}
		_, s := readState(t, []byte(c.data))
		removers := state.Connect(s).Removers()
		engineRecords := 0
		for _, o := range s.Objects {
			if _, old := olderNames[string(o.Type)]; old {
				t.Errorf("%s state: record %s kept its old type %q", c.name, o.Name, o.Type)
			}
			k, _ := state.KindOf(o.Type)
			if !k.Fields.Engine {
				continue
			}
			engineRecords++
			if string(o.Engine) != c.engine {
				t.Errorf("%s state: %s has engine %q, want %q", c.name, o, o.Engine, c.engine)
			}
			if !strings.HasPrefix(o.String(), c.name+" ") {
				t.Errorf("%s state: a record is described %q, want it to name %s", c.name, o, c.name)
			}
			if removers[o.Type] == nil {
				t.Errorf("%s state: down finds no Remover for %s", c.name, o)
			}
		}
		if engineRecords != len(c.old) {
			t.Errorf("%s state: %d engine records read, want %d", c.name, engineRecords, len(c.old))
		}
	}
	for old, typ := range olderNames {
		if got := state.OrderOf(typ); old == "docker-image" || old == "podman-image" {
			if got != state.SideBySide {
				t.Errorf("%s records are removed in order %d, want side by side", old, got)
			}
		} else if got != state.InReverse {
			t.Errorf("%s records are removed in order %d, want in reverse", old, got)
		}
	}
}

// A developer upgrades occ while an environment made by the release before the record kinds
// moved to their layers is up: its state.json (one record of every type, written by that
// release) loads, validates, describes every record as before and encodes back byte for byte,
// but for the engine records' types, written under their names of today.
func TestStateWrittenBeforeKindsMovedStillLoads(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "state-v2-1e50d89.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantDesc, err := os.ReadFile(filepath.Join("testdata", "state-v2-1e50d89.objects.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir, s := readState(t, golden)
	if err := s.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var desc strings.Builder
	for _, o := range s.Objects {
		desc.WriteString(o.String() + "\n")
	}
	if desc.String() != string(wantDesc) {
		t.Errorf("descriptions changed:\n%s\nwant:\n%s", desc.String(), wantDesc)
	}
	// The store writes it back unchanged but for the engine records' types, which it writes
	// under their names of today.
	d, err := state.Open(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer d.Close()
	st := d.State()
	again, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.NewReplacer(`"docker-image"`, `"pulled-image"`, `"docker-network"`, `"network"`, `"docker-volume"`, `"volume"`).Replace(string(golden))
	if string(append(again, '\n')) != renamed {
		t.Errorf("the state re-encodes differently:\n%s", again)
	}
}
