package compose

import (
	"context"
	"slices"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// jobsEngine answers the calls DetachExitedJobs makes for a project whose jobs have exited: one
// container per job, the network's members as given, and the disconnections it was asked for.
// The other verbs are not called (the nil interface panics if they are).
type jobsEngine struct {
	engine.Engine
	members      map[string]string
	disconnected []string
}

func (e *jobsEngine) List(_ context.Context, _ engine.Sort, labels map[string]string) ([]engine.Object, error) {
	for _, svc := range JobServices {
		if labels[LabelService] == svc {
			return []engine.Object{{Sort: engine.Containers, ID: svc + "-id"}}, nil
		}
	}
	return nil, nil
}

func (e *jobsEngine) Inspect(_ context.Context, sort engine.Sort, name string) (engine.Object, error) {
	if sort == engine.Networks {
		return engine.Object{Sort: sort, Name: name, Members: e.members}, nil
	}
	return engine.Object{Sort: sort, ID: name, State: "exited"}, nil
}

func (e *jobsEngine) Disconnect(_ context.Context, _, id string) error {
	e.disconnected = append(e.disconnected, id)
	return nil
}

// After migrate and bootstrap exit, Podman still lists their containers on the development
// network with no address, which k3d refuses when the cluster joins it: those are disconnected.
// Docker lists only running containers (with their addresses), so there nothing is.
func TestDetachExitedJobsListedWithoutAnAddress(t *testing.T) {
	for _, c := range []struct {
		name    string
		members map[string]string
		want    []string
	}{
		{"podman", map[string]string{
			ServiceMigrate + "-id":   "",
			ServiceBootstrap + "-id": "",
			"postgres-id":            "10.89.0.2/24",
		}, []string{ServiceMigrate + "-id", ServiceBootstrap + "-id"}},
		{"docker", map[string]string{
			"postgres-id": "172.18.0.2/16",
		}, nil},
		{"a job still listed with its address", map[string]string{
			ServiceMigrate + "-id": "10.89.0.3/24",
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &jobsEngine{members: c.members}
			if err := (Stack{Project: "p", Engine: e}).DetachExitedJobs(context.Background(), "p_development"); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e.disconnected, c.want) {
				t.Fatalf("disconnected %v, want %v", e.disconnected, c.want)
			}
		})
	}
}
