package locate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// `occ dev up --dry-run` on a laptop whose engine is stopped: auto plans Docker's place
// unidentified with the search that found nothing, so the dry run still shows the whole plan;
// --engine podman finding nothing is refused at once; a running engine is planned as it said it is.
func TestForPlanKeepsDockersPlaceWhenAutoFindsNothing(t *testing.T) {
	env, _ := testEnv(t, 1000, nil)
	ctx := context.Background()
	got, err := ForPlan(ctx, "", "", env)
	if err != nil || got.NotFound == nil || got.Endpoint.Socket != env.system(DefaultDockerSocket) || got.Source == "" || got.Kind != "" {
		t.Fatalf("auto, nothing running: %+v, %v; want Docker's default place unidentified and the search", got, err)
	}
	var nf *NotFoundError
	if _, err := ForPlan(ctx, "podman", ChoiceEnv, env); !errors.As(err, &nf) || nf.ChoiceSource != ChoiceEnv {
		t.Errorf("podman, nothing running: %v; want a NotFoundError naming %s", err, ChoiceEnv)
	}
	if _, err := ForPlan(ctx, "Docker", "", env); err == nil {
		t.Error("a bad choice was accepted")
	}
	fakeEngine(t, env.system(DefaultDockerSocket), dockerVersionJSON)
	got, err = ForPlan(nil, "auto", "", env)
	if err != nil || got.NotFound != nil || got.Kind != engine.Docker || got.Version != "28.5.2" || filepath.Base(got.Endpoint.Socket) != "docker.sock" {
		t.Errorf("auto, Docker running: %+v, %v", got, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ForPlan(cancelled, "", "", env); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted lookup: %v, want context.Canceled", err)
	}
}
