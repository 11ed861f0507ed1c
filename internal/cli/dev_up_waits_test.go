package cli

import (
	"bytes"
	"testing"

	"github.com/openclaw/occ/internal/occdev/step"
)

// `occ dev up --dry-run -v` prints a waiting step's waits as "waits for" lines under its note,
// never as "-" lines of what it creates.
func TestDryRunPrintsWaitsAsWaits(t *testing.T) {
	d := step.Note("nothing created; waits by watch up to 10m0s per workload").Waiting(
		step.Wait{Kind: "Deployment", Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller", Ready: "every replica is ready"})
	var b bytes.Buffer
	printDescription(&b, "  ", d)
	want := "  · nothing created; waits by watch up to 10m0s per workload\n" +
		"  · waits for Deployment agent-sandbox-system/agent-sandbox-controller until every replica is ready\n"
	if b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
}
