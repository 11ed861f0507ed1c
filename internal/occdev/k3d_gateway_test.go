package occdev_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/state"
)

// testV01GatewayChartInstalls: a developer behind a VPN runs `up` with a node resolver, and the
// Gateway chart of the v0.1 layout (image helpers rendering registry/repository@digest,
// gateway.toml carrying the supervisor and sandbox runtime images, the Agent Sandbox preflight
// on by default) passes the offline check and the live install: Helm's discovery of the new
// cluster sees the Agent Sandbox API the manifest added. The Gateway's configuration in the
// cluster names the pinned digests; the node resolves through the chosen server; `down` leaves
// nothing.
func testV01GatewayChartInstalls(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	opts := b.options(t)
	opts.K3d().DNSResolver = "10.64.0.53"
	downAtEnd(t, opts.StateDir)
	if _, err := occdev.Up(ctx, opts); err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, opts.Log)
	}
	vols := b.volumesOf(t, opts.K3d().ClusterName)
	st, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Selections == nil || st.Selections.DNSResolver != "10.64.0.53" {
		t.Errorf("recorded selections %+v", st.Selections)
	}
	cm, err := kubeClient(t, st.Cluster).CoreV1().ConfigMaps("oce-system").Get(ctx, occdev.GatewayRelease+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	toml := cm.Data["gateway.toml"]
	imgs := b.set.OpenShell.Images
	for _, want := range []string{
		`supervisor_image = "` + imgs.Supervisor.DigestReference() + `"`,
		`sandbox_runtime_image = "` + imgs.Sandbox.DigestReference() + `"`,
		`default_image = "ghcr.io/nvidia/openshell-community/sandboxes/base:latest"`,
	} {
		if !strings.Contains(toml, want) {
			t.Errorf("the installed gateway.toml lacks %q:\n%s", want, toml)
		}
	}
	node := "k3d-" + opts.K3d().ClusterName + "-server-0"
	res, err := b.Engine.Exec(ctx, node, false, "cat", "/etc/resolv.conf")
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "nameserver 10.64.0.53\n") || strings.Count(res.Stdout, "nameserver") != 1 {
		t.Errorf("node resolv.conf: %+v (%v)", res, err)
	}
	if fi, err := os.Stat(filepath.Join(opts.StateDir, "node-resolv.conf")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("node-resolv.conf in the state directory: %v", err)
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
		t.Errorf("after down: %v", left)
	}
	if !stateGone(opts.StateDir) {
		t.Errorf("state directory %s left after down", opts.StateDir)
	}
}

// testChartIgnoresSupervisorKey: the same chart, with a supervisor image helper that ignores
// supervisor.image.* (it renders the official repository at the chart's version), is refused
// when its render is checked: the refusal names gateway.toml's supervisor_image line in the
// Gateway's ConfigMap and the values keys meant to set it, and nothing is left.
func testChartIgnoresSupervisorKey(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	helpers := chartstest.GatewayChart()["templates/_helpers.tpl"]
	old := `{{- define "openshell.supervisorImage" -}}
{{- include "openshell.imageRef" (dict "image" .Values.supervisor.image "root" .) -}}
{{- end -}}`
	if !strings.Contains(helpers, old) {
		t.Fatal("the fixture's supervisor image helper changed; update this variant")
	}
	fixture := chartstest.New(t, t.TempDir(), chartstest.Options{Files: map[string]string{
		"deploy/helm/openshell/templates/_helpers.tpl": strings.Replace(helpers, old, `{{- define "openshell.supervisorImage" -}}
{{- printf "ghcr.io/nvidia/openshell/supervisor:%s" .Chart.AppVersion -}}
{{- end -}}`, 1),
	}})
	set := *b.set
	set.OpenShell.SourceArchive = fixture.Pins.OpenShell.SourceArchive
	opts := b.options(t)
	opts.PinFile, opts.ArchiveFile = b.writePins(&set), fixture.ArchivePath
	upFails(t, b, opts, "Check the images of the rendered Gateway chart", "would make the cluster run images that are not the pinned digests",
		`ConfigMap openshell-gateway-config (openshell/templates/gateway-config.yaml) gateway.toml line 13, key openshell.gateway.supervisor_image: image "ghcr.io/nvidia/openshell/supervisor:`+set.OpenShell.Version+`"`,
		"supervisor.image.registry, supervisor.image.repository, supervisor.image.digest",
		"the pinned supervisor image "+set.OpenShell.Images.Supervisor.DigestReference()+" is named nowhere", "rolled back")
}

// testManifestWithoutCRDs: with a local Agent Sandbox manifest that lacks the CRDs, the Gateway
// chart's preflight fails the offline render, occ names the API versions the cluster would not
// serve, and the rollback leaves nothing (the cluster lane is cancelled wherever it was).
func testManifestWithoutCRDs(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(chartstest.AgentSandboxManifestWithoutCRDs()), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := b.options(t)
	opts.AgentSandboxManifest = manifest
	upFails(t, b, opts, "Check the images of the rendered Gateway chart", "Agent Sandbox is required",
		"the cluster would not serve these API versions the chart tests for: agents.x-k8s.io/v1alpha1, agents.x-k8s.io/v1alpha1/Sandbox, agents.x-k8s.io/v1beta1, agents.x-k8s.io/v1beta1/Sandbox",
		"the Agent Sandbox manifest "+manifest+" defines no CustomResourceDefinition serving them", "rolled back")
}
