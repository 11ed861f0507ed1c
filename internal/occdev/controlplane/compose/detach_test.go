package compose

import (
	"context"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// jobsEngine answers the calls DetachExitedJobs makes for a project whose jobs have exited: one
// container per job, the network's members as given, and the disconnections it was asked for.
// The other calls of Engine are not made (the nil interface panics if they are).
type jobsEngine struct {
	Engine
	members      map[string]network.EndpointResource
	disconnected []string
}

func (e *jobsEngine) ContainerList(_ context.Context, o container.ListOptions) ([]container.Summary, error) {
	for _, svc := range JobServices {
		if slices.Contains(o.Filters.Get("label"), LabelService+"="+svc) {
			return []container.Summary{{ID: svc + "-id"}}, nil
		}
	}
	return nil, nil
}

func (e *jobsEngine) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id, State: &container.State{Status: "exited"}}}, nil
}

func (e *jobsEngine) NetworkInspect(_ context.Context, name string, _ network.InspectOptions) (network.Inspect, error) {
	return network.Inspect{Name: name, Containers: e.members}, nil
}

func (e *jobsEngine) NetworkDisconnect(_ context.Context, _, id string, _ bool) error {
	e.disconnected = append(e.disconnected, id)
	return nil
}

// After migrate and bootstrap exit, Podman still lists their containers on the development
// network with no address, which k3d refuses when the cluster joins it: those are disconnected.
// Docker lists only running containers (with their addresses), so there nothing is.
func TestDetachExitedJobsListedWithoutAnAddress(t *testing.T) {
	for _, c := range []struct {
		name    string
		members map[string]network.EndpointResource
		want    []string
	}{
		{"podman", map[string]network.EndpointResource{
			ServiceMigrate + "-id":   {Name: "p-migrate-1"},
			ServiceBootstrap + "-id": {Name: "p-bootstrap-1"},
			"postgres-id":            {Name: "p-postgres-1", IPv4Address: "10.89.0.2/24"},
		}, []string{ServiceMigrate + "-id", ServiceBootstrap + "-id"}},
		{"docker", map[string]network.EndpointResource{
			"postgres-id": {Name: "p-postgres-1", IPv4Address: "172.18.0.2/16"},
		}, nil},
		{"a job still listed with its address", map[string]network.EndpointResource{
			ServiceMigrate + "-id": {Name: "p-migrate-1", IPv4Address: "10.89.0.3/24"},
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
