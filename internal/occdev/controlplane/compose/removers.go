package compose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Labels Compose gives the networks and volumes it creates, with the project label: together
// they are the evidence that an engine object of a recorded name is still the project's.
const (
	LabelNetwork = "com.docker.compose.network"
	LabelVolume  = "com.docker.compose.volume"
)

// Records returns the state records of the project's engine objects, in the order they are
// recorded (before `compose up` creates anything): its networks and volumes, each with the
// labels Compose gives it, then the project itself. `down` undoes records last-first, so the
// project's own remover (`compose down --volumes` on the snapshot, then the check that nothing
// of the project is left) runs first, and the network and volume records afterwards only confirm
// that Compose removed them, or remove what a failed `compose down` left if it is still theirs.
func (m *Model) Records() []state.Object {
	p := m.Project
	var out []state.Object
	for _, key := range sortedKeys(p.Networks) {
		out = append(out, state.Object{Type: TypeNetwork, Name: p.Networks[key].Name, Engine: m.engine,
			Labels: map[string]string{LabelProject: p.Name, LabelNetwork: key}})
	}
	for _, key := range sortedKeys(p.Volumes) {
		out = append(out, state.Object{Type: TypeVolume, Name: p.Volumes[key].Name, Engine: m.engine,
			Labels: map[string]string{LabelProject: p.Name, LabelVolume: key}})
	}
	return append(out, state.Object{Type: TypeProject, Name: p.Name})
}

// ServicesRecord is the record of the API services (controller and worker-kubernetes), made
// just before they start: it is the newest Compose record, so `down` and a rollback stop them
// before anything else is removed, and nothing reconciles against a cluster being deleted.
func ServicesRecord(project string) state.Object {
	return state.Object{Type: TypeServices, Name: project}
}

// Recorded is how the Compose removers reach the recorded project: the recorded engine (never
// DOCKER_HOST) and the recorded snapshot. The plugin is located on first use, where the Docker
// CLI looks for it; it is a tool, not part of what was recorded.
type Recorded struct {
	// Engine connects to the recorded engine (docker.Recorded).
	Engine func(context.Context) (*docker.Engine, error)
	// Project is the recorded snapshot; nil when the state records none.
	Project *state.ComposeProject
	// FindPlugin locates the plugin; nil looks where the Docker CLI does.
	FindPlugin func(context.Context) (Plugin, error)

	once   sync.Once
	plugin Plugin
	err    error
}

func (r *Recorded) snapshot(o state.Object) (Snapshot, error) {
	if r.Project == nil {
		return Snapshot{}, fmt.Errorf("%s: the state records no Compose snapshot to act on; remove the project's containers, volumes and network by hand (docker compose -p %s down --volumes)", o, o.Name)
	}
	if r.Project.Project != o.Name {
		return Snapshot{}, fmt.Errorf("%s: the state's Compose snapshot is of project %s, not %s; the record was changed outside occ", o, r.Project.Project, o.Name)
	}
	return RecordedSnapshot(*r.Project), nil
}

func (r *Recorded) runner(ctx context.Context, o state.Object) (Runner, *docker.Engine, error) {
	snap, err := r.snapshot(o)
	if err != nil {
		return Runner{}, nil, err
	}
	eng, err := r.Engine(ctx)
	if err != nil {
		return Runner{}, nil, err
	}
	r.once.Do(func() {
		find := r.FindPlugin
		if find == nil {
			find = func(ctx context.Context) (Plugin, error) {
				return FindPlugin(ctx, FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
			}
		}
		r.plugin, r.err = find(ctx)
	})
	if r.err != nil {
		return Runner{}, nil, r.err
	}
	return Runner{Plugin: r.plugin, Endpoint: eng.Endpoint.String(), Snapshot: snap}, eng, nil
}

// ProjectRemover is the state.Remover of recorded Compose projects: `compose down --volumes
// --remove-orphans` on the recorded snapshot, then the check that no container, volume or network
// of the project remains (by label, and by the snapshot's names). Safe to repeat.
func ProjectRemover(r *Recorded) state.Remover { return projectRemover{r} }

type projectRemover struct{ r *Recorded }

func (p projectRemover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	snap, err := p.r.snapshot(o)
	if err != nil {
		return state.Removal{}, err
	}
	eng, err := p.r.Engine(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	names, err := snapshotNames(ctx, snap)
	if err != nil {
		return state.Removal{}, err
	}
	before, err := FindResources(ctx, eng.Verbs(), o.Name, names)
	if err != nil {
		return state.Removal{}, err
	}
	if before.Empty() {
		return state.Removal{Outcome: state.AlreadyGone}, nil
	}
	run, _, err := p.r.runner(ctx, o)
	if err != nil {
		return state.Removal{}, err
	}
	if err := Remove(ctx, RemoveOptions{Runner: run, Engine: eng.Verbs(), Names: names}); err != nil {
		return state.Removal{}, err
	}
	return state.Removal{Outcome: state.Removed}, nil
}

func (p projectRemover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	snap, err := p.r.snapshot(o)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	eng, err := p.r.Engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	names, err := snapshotNames(ctx, snap)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	res, err := FindResources(ctx, eng.Verbs(), o.Name, names)
	switch {
	case err != nil:
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	case res.Empty():
		return state.Inspection{State: state.Missing}
	}
	return state.Inspection{State: state.Present, Detail: fmt.Sprintf("%d containers, %d volumes, %d networks", len(res.Containers), len(res.Volumes), len(res.Networks))}
}

// snapshotNames reads the snapshot's volume, network and container names. A snapshot that is
// gone (the state directory was emptied by hand) leaves the labels to find the project by.
func snapshotNames(ctx context.Context, snap Snapshot) (Names, error) {
	if _, err := os.Lstat(snap.Path); errors.Is(err, os.ErrNotExist) {
		return Names{}, nil
	}
	p, err := LoadSnapshot(ctx, snap)
	if err != nil {
		return Names{}, err
	}
	return NamesOf(p), nil
}

// ServicesRemover is the state.Remover of the recorded API services: `compose stop controller
// worker-kubernetes` on the snapshot. Their containers stay (stopped) until the project's own
// remover takes the project down.
func ServicesRemover(r *Recorded) state.Remover { return servicesRemover{r} }

type servicesRemover struct{ r *Recorded }

func (s servicesRemover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	run, eng, err := s.r.runner(ctx, o)
	if err != nil {
		return state.Removal{}, err
	}
	states, err := Stack{Project: o.Name, Engine: eng.Verbs()}.Status(ctx, APIServices...)
	if err != nil {
		return state.Removal{}, err
	}
	running := false
	for _, st := range states {
		running = running || st.State == "running" || st.State == "restarting" || st.State == "paused"
	}
	if !running {
		return state.Removal{Outcome: state.AlreadyGone}, nil
	}
	if err := StopReconcilers(ctx, run); err != nil {
		return state.Removal{}, err
	}
	return state.Removal{Outcome: state.Removed}, nil
}

func (s servicesRemover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	eng, err := s.r.Engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	states, err := Stack{Project: o.Name, Engine: eng.Verbs()}.Status(ctx, APIServices...)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	var parts []string
	missing := 0
	for _, st := range states {
		parts = append(parts, st.Service+" "+st.String())
		if st.State == "missing" {
			missing++
		}
	}
	if missing == len(states) {
		return state.Inspection{State: state.Missing}
	}
	return state.Inspection{State: state.Present, Detail: strings.Join(parts, ", ")}
}

// NetworkRemover is the state.Remover of the project's recorded networks. The project's remover
// takes them down with the project; this one confirms they are gone, and removes one that a
// failed `compose down` left only while it still carries the recorded labels (a same-named
// network of someone else is left alone).
func NetworkRemover(eng func(context.Context) (engine.Engine, error)) state.Remover {
	return engineObjectRemover{engine: eng, kind: "network"}
}

// VolumeRemover is NetworkRemover for the project's recorded volumes.
func VolumeRemover(eng func(context.Context) (engine.Engine, error)) state.Remover {
	return engineObjectRemover{engine: eng, kind: "volume"}
}

type engineObjectRemover struct {
	engine func(context.Context) (engine.Engine, error)
	kind   string
}

// sort is the engine's sort of the object.
func (e engineObjectRemover) sort() engine.Sort {
	if e.kind == "network" {
		return engine.Networks
	}
	return engine.Volumes
}

// look returns the object's labels and engine ID, or found false.
func (e engineObjectRemover) look(ctx context.Context, eng engine.Engine, name string) (map[string]string, string, bool, error) {
	o, err := eng.Inspect(ctx, e.sort(), name)
	if engine.IsNotFound(err) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("inspect %s %s: %w", e.kind, name, err)
	}
	if e.kind != "network" {
		return o.Labels, "", true, nil // a volume has no ID but its name
	}
	// The API also matches an ID prefix; only the exact name is this record's.
	if o.Name != name {
		return nil, "", false, nil
	}
	return o.Labels, o.ID, true, nil
}

// ours reports whether labels carry every recorded label (and the ID is the recorded one).
func ours(o state.Object, labels map[string]string, id string) (bool, string) {
	for k, v := range o.Labels {
		if labels[k] != v {
			return false, fmt.Sprintf("its label %s is %q, not the recorded %q", k, labels[k], v)
		}
	}
	if o.ID != "" && id != "" && o.ID != id {
		return false, fmt.Sprintf("it is %s, not the recorded %s", shortID(id), shortID(o.ID))
	}
	return true, ""
}

func shortID(id string) string { return id[:min(12, len(id))] }

func (e engineObjectRemover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	eng, err := e.engine(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	labels, id, found, err := e.look(ctx, eng, o.Name)
	if err != nil {
		return state.Removal{}, err
	}
	if !found {
		return state.Removal{Outcome: state.AlreadyGone}, nil
	}
	if ok, why := ours(o, labels, id); !ok {
		return state.Removal{Outcome: state.LeftAlone, Detail: why}, nil
	}
	if err := eng.Remove(ctx, e.sort(), o.Name); err != nil && !engine.IsNotFound(err) {
		return state.Removal{}, fmt.Errorf("remove %s %s (still there after the project was taken down): %w", e.kind, o.Name, err)
	}
	return state.Removal{Outcome: state.Removed}, nil
}

func (e engineObjectRemover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	eng, err := e.engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	labels, id, found, err := e.look(ctx, eng, o.Name)
	switch {
	case err != nil:
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	case !found:
		return state.Inspection{State: state.Missing}
	}
	if ok, why := ours(o, labels, id); !ok {
		return state.Inspection{State: state.Changed, Detail: why}
	}
	return state.Inspection{State: state.Present}
}

// RecordIDs fills the engine IDs of the recorded networks once Compose has created them, so
// `down` can tell the project's network from a same-named one made later.
func RecordIDs(ctx context.Context, eng engine.Engine, rec interface{ Record(state.Object) error }, records []state.Object) error {
	for _, o := range records {
		if o.Type != TypeNetwork {
			continue
		}
		n, err := eng.Inspect(ctx, engine.Networks, o.Name)
		if err != nil {
			return fmt.Errorf("inspect network %s: %w", o.Name, err)
		}
		if ok, why := ours(o, n.Labels, ""); !ok {
			return fmt.Errorf("network %s is not the one Compose created for the project: %s", o.Name, why)
		}
		o.ID = n.ID
		if err := rec.Record(o); err != nil {
			return fmt.Errorf("record network %s: %w", o.Name, err)
		}
	}
	return nil
}
