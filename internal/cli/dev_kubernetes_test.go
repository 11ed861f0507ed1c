package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
)

// `occ dev up --control-plane kubernetes` finishes: the summary says the stack is ready with
// the reference's fields (where OCE runs, drivers, API, Installation, key, administrator) before
// the platform's, and the cleanup command is exactly the one to paste, shell-quoted (a state
// directory with a space and a quote stays one argument).
func TestKubernetesSummaryPrintsTheReferenceFields(t *testing.T) {
	dir := "/home/dev/oce state/it's"
	sum := &occdev.Summary{
		Engine: "Docker 20.10.24 at unix:///var/run/docker.sock (from the default socket)", ClusterProvider: "k3d", Cluster: "occ-dev-abc",
		Context: "k3d-occ-dev-abc", Kubeconfig: dir + "/kubeconfig", Namespace: "oce-system", StateDirectory: dir,
		Images:      []string{"docker.io/library/openclaw-enterprise-controller@sha256:" + strings.Repeat("1", 64)},
		DownCommand: occdev.DownCommand("occ", dir),
		OCE: &occdev.OCESummary{
			ControlPlane: "Kubernetes (namespace oce-system, chart from /src/oce at aaaaaaaaaaaa)",
			Drivers:      "compute kubernetes, sandbox openshell", APIURL: "http://127.0.0.1:3000", InstallationID: "ins_1",
			KeyFile: dir + "/initial-admin-service-key.json", AdminEmail: "admin@development.openclaw.invalid",
			PasswordFile: dir + "/initial-admin-password", Namespace: "ns_1",
		},
	}
	var out bytes.Buffer
	if err := printUpSummary(&out, sum); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	row := func(label, value string) string { return fmt.Sprintf("  %-16s %s\n", label+":", value) }
	order := []string{
		"OpenClaw Enterprise development stack is ready.",
		row("Control plane", sum.OCE.ControlPlane), row("Drivers", "compute kubernetes, sandbox openshell"), row("API URL", "http://127.0.0.1:3000"),
		row("Installation ID", "ins_1"), row("Key file", dir+"/initial-admin-service-key.json (0600; verified against the Installation)"),
		row("OCC Namespace", "ns_1 (ready)"), row("Admin email", "admin@development.openclaw.invalid"),
		row("Password file", dir+"/initial-admin-password (0600)"), row("Engine", sum.Engine), row("Context", "k3d-occ-dev-abc"),
		"Remove everything it created with:\n  occ dev down --state-dir '/home/dev/oce state/it'\\''s'\n",
	}
	at := 0
	for _, w := range order {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("the summary lacks %q after position %d:\n%s", w, at, text)
		}
		at += i + len(w)
	}
}
