package state_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { state.SetRefOf(kubeobj.RefOf) }

// Every layer that records something registers its kind: the twelve record types occ writes
// are known, each under the on-disk name its records have always carried (the three of Podman's
// engine objects beside Docker's).
func TestEveryRecordedTypeIsRegistered(t *testing.T) {
	want := []state.Type{
		kubeobj.TypeObject, helmrelease.TypeRelease, k3d.TypeCluster, images.TypeDockerImage, images.TypeClusterImage,
		compose.TypeNetwork, compose.TypeVolume, compose.TypeProject, compose.TypeServices,
		images.TypePodmanImage, compose.TypePodmanNetwork, compose.TypePodmanVolume,
	}
	names := []string{"kubernetes", "helm-release", "k3d-cluster", "docker-image", "cluster-image", "docker-network", "docker-volume", "compose-project", "compose-services",
		"podman-image", "podman-network", "podman-volume"}
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
}

// A developer upgrades occ while an environment made by the release before the record kinds
// moved to their layers is up: its state.json (one record of every type, written by that
// release) loads, validates, describes every record as before and encodes back byte for byte.
func TestStateWrittenBeforeKindsMovedStillLoads(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "state-v2-1e50d89.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantDesc, err := os.ReadFile(filepath.Join("testdata", "state-v2-1e50d89.objects.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "occ-dev")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, state.MarkerName), []byte(state.MarkerContent), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, state.FileName), golden, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := state.Read(dir)
	if err != nil {
		t.Fatalf("read the state written at 1e50d89: %v", err)
	}
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
	// The store writes it back unchanged: opening and rewriting the record is byte-compatible.
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
	if !bytes.Equal(append(again, '\n'), golden) {
		t.Errorf("the state re-encodes differently:\n%s", again)
	}
}
