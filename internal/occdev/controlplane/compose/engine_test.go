package compose

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
)

// servicesEngine lists the containers of each service as given; the other calls of Engine are
// not made (the nil interface panics if they are).
type servicesEngine struct {
	Engine
	containers map[string][]container.Summary
}

func (e servicesEngine) ContainerList(_ context.Context, o container.ListOptions) ([]container.Summary, error) {
	for svc, list := range e.containers {
		if slices.Contains(o.Filters.Get("label"), LabelService+"="+svc) {
			return list, nil
		}
	}
	return nil, nil
}

// occ was killed while Compose recreated the controller: the old container, stopped and renamed,
// is beside the new one, created but never started. The controller runs no image (so the next
// reload recreates it); the worker's one running container runs its image; a stopped worker
// would run none either.
func TestServiceImagesOnlyOfOneRunningContainer(t *testing.T) {
	e := servicesEngine{containers: map[string][]container.Summary{
		ServiceController: {{ID: "old", ImageID: "sha256:old", State: container.StateExited}, {ID: "new", ImageID: "sha256:new", State: container.StateCreated}},
		ServiceWorker:     {{ID: "w", ImageID: "sha256:worker", State: container.StateRunning}},
		ServicePostgres:   {{ID: "p", ImageID: "sha256:postgres", State: container.StateExited}},
	}}
	got, err := Stack{Project: "p", Engine: e}.ServiceImages(context.Background(), ServiceController, ServiceWorker, ServicePostgres, "absent")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{ServiceWorker: "sha256:worker"}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
