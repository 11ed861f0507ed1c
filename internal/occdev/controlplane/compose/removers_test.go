package compose

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// `occ dev down` of a Compose project from its record alone: the project, its network and
// volumes recorded before `compose up`, the API services recorded before they start. Handing
// the records to their removers last-first stops the API services, takes the project down with
// its volumes, and finds the network and volumes already gone; a second `down` finds everything
// gone; a same-named network someone creates afterwards is left alone and reported as changed.
func TestRecordedProjectIsRemovedFromTheRecordAlone(t *testing.T) {
	b := newBed(t)
	m, snap := b.builtSnapshot(UserOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := state.Create(filepath.Join(t.TempDir(), "state"), state.State{Profile: "compose", Cluster: state.Cluster{Provider: "k3d"}, Engine: &state.Engine{Endpoint: b.engine.Host}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	records := m.Records()
	for _, o := range records {
		if err := d.Record(o); err != nil {
			t.Fatal(err)
		}
	}
	r, s := b.runner(snap), b.stack()
	if err := StartData(ctx, StartOptions{Runner: r, Stack: s}); err != nil {
		t.Fatal(err)
	}
	if err := RecordIDs(ctx, b.verbs(), d, records); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(ServicesRecord(m.Name())); err != nil {
		t.Fatal(err)
	}
	b.writeAPIInputs(installationYAML, "apiVersion: v1\nkind: Config\n")
	if err := StartAPI(ctx, StartOptions{Runner: r, Stack: s}); err != nil {
		t.Fatal(err)
	}

	st := d.State()
	if n := st.Objects[0]; n.Type != TypeNetwork || len(n.ID) != 64 {
		t.Fatalf("the network record has no engine ID after up: %+v", n)
	}
	engine := docker.Recorded(st.Engine)
	rec := &Recorded{Engine: engine, Project: &state.ComposeProject{Project: snap.Project, Snapshot: snap.Path, Checkout: snap.Checkout}}
	reg := state.Removers{
		TypeProject:  ProjectRemover(rec),
		TypeServices: ServicesRemover(rec),
		TypeNetwork:  NetworkRemover(docker.VerbsOf(engine)),
		TypeVolume:   VolumeRemover(docker.VerbsOf(engine)),
	}
	for _, o := range st.Objects {
		if got := reg.Inspect(ctx, o); got.State != state.Present {
			t.Errorf("before down, %s is %s (%s)", o, got.State, got.Detail)
		}
	}
	down := func(first bool) map[state.Type][]state.Outcome {
		out := map[state.Type][]state.Outcome{}
		for i := len(st.Objects) - 1; i >= 0; i-- {
			o := st.Objects[i]
			rm, err := reg.Remove(ctx, o)
			if err != nil {
				t.Fatalf("remove %s: %v", o, err)
			}
			if first && o.Type == TypeServices {
				// The reconcilers are stopped first, while the data services still run.
				states, err := s.Status(ctx, ServiceController, ServiceWorker, ServicePostgres)
				if err != nil {
					t.Fatal(err)
				}
				if states[0].State == "running" || states[1].State == "running" || states[2].State != "running" {
					t.Errorf("after stopping the API services: %v", states)
				}
			}
			out[o.Type] = append(out[o.Type], rm.Outcome)
		}
		return out
	}
	first := down(true)
	want := map[state.Type]state.Outcome{TypeServices: state.Removed, TypeProject: state.Removed, TypeVolume: state.AlreadyGone, TypeNetwork: state.AlreadyGone}
	for typ, outs := range first {
		for _, got := range outs {
			if got != want[typ] {
				t.Errorf("first down: %s record %s, want %s", typ, got, want[typ])
			}
		}
	}
	if err := VerifyGone(ctx, b.verbs(), m.Name(), m.Names()); err != nil {
		t.Fatal(err)
	}
	for typ, outs := range down(false) {
		for _, got := range outs {
			if got != state.AlreadyGone {
				t.Errorf("second down: %s record %s, want already gone", typ, got)
			}
		}
	}

	// Someone else's network under the recorded name is never removed.
	foreign, err := b.engine.API.NetworkCreate(ctx, m.Network.Name, network.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.engine.API.NetworkRemove(context.Background(), foreign.ID)
	if got := reg.Inspect(ctx, st.Objects[0]); got.State != state.Changed {
		t.Errorf("a foreign network of the recorded name is %s (%s), want changed", got.State, got.Detail)
	}
	rm, err := reg.Remove(ctx, st.Objects[0])
	if err != nil || rm.Outcome != state.LeftAlone {
		t.Fatalf("removing a foreign network of the recorded name: %+v, %v; want left alone", rm, err)
	}
	if _, err := b.engine.API.NetworkInspect(ctx, foreign.ID, network.InspectOptions{}); err != nil {
		t.Fatalf("the foreign network was removed: %v", err)
	}
}
