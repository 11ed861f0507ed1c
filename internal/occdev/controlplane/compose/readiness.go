package compose

import (
	"strings"

	"github.com/openclaw/occ/internal/occdev/step"
)

// JobWaits are the dry run's waits of StartData's WaitCompleted of the one-shot jobs
// (JobServices) in the Compose project project.
func JobWaits(project string) []step.Wait {
	out := make([]step.Wait, 0, len(JobServices))
	for _, svc := range JobServices {
		out = append(out, step.Wait{Kind: "service", Name: svc, Ready: "its one container exits 0", Note: "of project " + project})
	}
	return out
}

// WorkerReadyWait is the dry run's wait of Stack.WorkerReady in the Compose project project:
// the worker's readiness probe, run by exec in the same poll as the API's session probe.
func WorkerReadyWait(project string) step.Wait {
	return step.Wait{Kind: "service", Name: ServiceWorker, Ready: "its readiness probe (" + strings.Join(WorkerReadyCommand, " ") + ", by exec) exits 0",
		Note: "of project " + project + ", in the same poll as the API"}
}
