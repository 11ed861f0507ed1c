package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
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

// An engineer in an OCE checkout previews `occ dev up --control-plane kubernetes` (and the same
// through OCC_DEVELOPMENT_CONTROL_PLANE=kubernetes with -o json): the dry run lists every
// object the in-cluster control plane would create with the step that makes it, the images it
// would build and pull, the API on loopback and the key file; nothing is created.
func TestDevUpKubernetesDryRunListsTheControlPlane(t *testing.T) {
	checkout, stateDir := isolateCompose(t)
	t.Setenv("OPENCLAW_DEV_PORT", "3111")
	// No engine runs here: the dry run says so as its one problem (exit 1), after the plan.
	noEngine := func(code int, errOut string) bool {
		return code == 1 && strings.Contains(errOut, "found 1 problem(s)")
	}
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-v", "--state-dir", stateDir, "--repository", checkout, "--control-plane", "kubernetes", "--cluster-provider", "k3d")
	if !noEngine(code, errOut) || !strings.Contains(out, "no usable container engine (Docker or Podman)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"Record the OCE control plane", "Pull the base images of the control-plane builds", "base images:   docker.io/library/node:24-bookworm@sha256:", "docker.io/library/node:24-bookworm-slim@sha256:", "Build the controller and Agent runtime images from the checkout", "Pull the PostgreSQL image",
		"Secret oce-system/postgres-bootstrap", "PersistentVolumeClaim oce-system/postgres-data", "PersistentVolumeClaim oce-system/bootstrap-password",
		"StatefulSet oce-system/postgres", "Secret oce-system/occ-installation-startup", "Helm release oce-system/openclaw-enterprise",
		"Deployment oce-system/occ-development-api-proxy", "Service oce-system/occ-development-api (NodePort 30080)",
		"Pod oce-system/bootstrap-key-reader (temporary", "OCE checkout:    " + checkout, "OCE API:         http://127.0.0.1:3111",
		"Key file:        " + filepath.Join(stateDir, "initial-admin-service-key.json"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Control plane:") {
		t.Errorf("the dry run says the control plane is not started:\n%s", out)
	}

	t.Setenv("OCC_DEVELOPMENT_CONTROL_PLANE", "kubernetes")
	code, out, errOut = run(t, "dev", "up", "--dry-run", "-o", "json", "--state-dir", stateDir, "--repository", checkout, "--cluster-provider", "k3d")
	if !noEngine(code, errOut) {
		t.Fatalf("json dry run: exit %d, stderr %q", code, errOut)
	}
	var dr occdev.DryRun
	if err := json.Unmarshal([]byte(out), &dr); err != nil {
		t.Fatalf("dry run -o json is not JSON: %v\n%s", err, out)
	}
	var o *kubeprofile.Document
	if raw, ok := dr.Plan.OCE.(occdev.RawDocument); ok {
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("the plan's oce: %v", err)
		}
	}
	if o == nil || o.Kubernetes == nil || o.Kubernetes.APIURL != "http://127.0.0.1:3111" || o.Checkout != checkout || dr.Plan.Namespace != "oce-system" {
		t.Errorf("json plan: %+v", dr.Plan.OCE)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the dry run created the state directory (%v)", err)
	}
}
