package composeprofile

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/profile"
)

// `occ dev reload migrate` (or bootstrap) names a one-shot job: reload never runs it again, so it
// is refused with what reruns it and the services reload does roll; a long-running service
// chooses the build of its image.
func TestReloadRefusesTheOneShotJobs(t *testing.T) {
	builds := []profile.Build{{Role: "development", Services: []string{"migrate", "bootstrap", "controller", "worker-kubernetes"}}}
	for _, job := range []string{"migrate", "bootstrap"} {
		_, err := Profile{}.ChooseBuilds(builds, []string{job})
		if err == nil || !strings.Contains(err.Error(), job+" is a one-shot job") || !strings.Contains(err.Error(), "occ dev down and occ dev up") ||
			!strings.Contains(err.Error(), "controller, worker-kubernetes") {
			t.Errorf("reload %s: %v, want it refused with what reruns it", job, err)
		}
	}
	got, err := Profile{}.ChooseBuilds(builds, []string{"controller"})
	if err != nil || len(got) != 1 || got[0].Role != "development" {
		t.Errorf("reload controller chose %+v, %v", got, err)
	}
}
