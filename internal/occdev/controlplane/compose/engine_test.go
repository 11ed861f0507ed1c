package compose

import (
	"context"
	"maps"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// servicesEngine lists the containers of each service as given; the other verbs are not called
// (the nil interface panics if they are).
type servicesEngine struct {
	engine.Engine
	containers map[string][]engine.Object
}

func (e servicesEngine) List(_ context.Context, _ engine.Sort, labels map[string]string) ([]engine.Object, error) {
	return e.containers[labels[LabelService]], nil
}

// occ was killed while Compose recreated the controller: the old container, stopped and renamed,
// is beside the new one, created but never started. The controller runs no image (so the next
// reload recreates it); the worker's one running container runs its image; a stopped worker
// would run none either.
func TestServiceImagesOnlyOfOneRunningContainer(t *testing.T) {
	e := servicesEngine{containers: map[string][]engine.Object{
		ServiceController: {{ID: "old", Image: "sha256:old", State: "exited"}, {ID: "new", Image: "sha256:new", State: "created"}},
		ServiceWorker:     {{ID: "w", Image: "sha256:worker", State: "running"}},
		ServicePostgres:   {{ID: "p", Image: "sha256:postgres", State: "exited"}},
	}}
	got, err := Stack{Project: "p", Engine: e}.ServiceImages(context.Background(), ServiceController, ServiceWorker, ServicePostgres, "absent")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{ServiceWorker: "sha256:worker"}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
