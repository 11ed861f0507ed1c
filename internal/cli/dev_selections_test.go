package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/testbed"
)

// writeSelections writes the fixture's Gateway and workspace charts and a local Agent Sandbox
// manifest into dir, and returns their paths, for a test to select them.
func writeSelections(t *testing.T, dir string) (gatewayChart, workspaceChart, manifest string) {
	t.Helper()
	gatewayChart, workspaceChart = chartstest.WriteCharts(t, filepath.Join(dir, "openshell"), nil)
	manifest = filepath.Join(dir, "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(chartstest.AgentSandboxManifest()), 0o600); err != nil {
		t.Fatal(err)
	}
	return gatewayChart, workspaceChart, manifest
}

// An OpenShell engineer previews `up` with the charts of their checkout and a local Agent
// Sandbox manifest, given as the reference's variables: the dry run names both selections, the
// step that uses the charts instead of the archive, the step that reads the manifest, and what
// the Gateway chart's render assumes of the cluster; -o json carries the same.
func TestDevUpDryRunShowsSelections(t *testing.T) {
	dir := isolateDev(t)
	gw, ws, manifest := writeSelections(t, dir)
	t.Setenv(occdev.EnvGatewayChart, gw)
	t.Setenv(occdev.EnvWorkspaceChart, ws)
	t.Setenv(occdev.EnvAgentSandboxManifest, manifest)
	stateDir := filepath.Join(dir, "dev-state")
	kubeconfig := testbed.Kubeconfig(t)
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-v", "--state-dir", stateDir, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"would run 16 steps", "3.1. Use the selected Gateway and Workspace charts", "uses the selected Gateway chart " + gw,
		"3.2. Read the selected Agent Sandbox manifest", "reads the selected " + manifest,
		"OpenShell charts: " + gw + " and " + ws + " (selected; the archive is not fetched)",
		"Agent Sandbox:   " + manifest + " (selected)",
		"Gateway render:  Kubernetes v1.36.4 (the pinned k3s image docker.io/rancher/k3s:v1.36.4-k3s1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "source archive") {
		t.Errorf("the dry run still fetches the archive:\n%s", out)
	}
	code, out, errOut = run(t, "dev", "up", "--dry-run", "-o", "json", "--state-dir", stateDir, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("json dry run: exit %d, stderr %q", code, errOut)
	}
	var dr occdev.DryRun
	if err := json.Unmarshal([]byte(out), &dr); err != nil {
		t.Fatal(err)
	}
	if p := dr.Plan; p.GatewayChart != gw || p.WorkspaceChart != ws || p.AgentSandboxManifest != manifest || p.GatewayRender.KubernetesVersion != "v1.36.4" {
		t.Errorf("json plan: %+v", p)
	}
	if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dry run created %s", stateDir)
	}
}

// The node resolver is a k3d setting: the dry run of the default provider shows it (with only
// the missing engine as a problem), and a bad value is a usage error naming the flag or the
// variable, the value, the rule and the fix, before anything is created.
func TestDevUpDNSResolverSetting(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	t.Setenv("OCC_DEVELOPMENT_CLUSTER_PROVIDER", "k3d")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-v", "--state-dir", stateDir, "--k3d-dns-resolver", "10.64.0.53")
	if code == 2 || !strings.Contains(out, "Node DNS:        10.64.0.53 (given by --k3d-dns-resolver (OCC_DEVELOPMENT_K3D_DNS_RESOLVER))") ||
		!strings.Contains(out, "nameserver 10.64.0.53 (given by --k3d-dns-resolver (OCC_DEVELOPMENT_K3D_DNS_RESOLVER)), mounted read-only over its /etc/resolv.conf") ||
		!strings.Contains(out, "looks up ghcr.io through its resolver") {
		t.Errorf("dry run: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	// By default occ chooses, and says from what: here no engine answers, so the kind of host
	// is not known and the node keeps k3d's handling.
	code, out, errOut = run(t, "dev", "up", "--dry-run", "--state-dir", stateDir)
	if code == 2 || !strings.Contains(out, "Node DNS:        k3d's own DNS handling (auto: no engine answered while planning") {
		t.Errorf("default dry run: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: map[string]string{k3d.EnvDNSResolver: "vpn-dns"}, want: []string{`OCC_DEVELOPMENT_K3D_DNS_RESOLVER "vpn-dns" is not an IPv4 address in dotted decimal (or auto or k3d)`, "or k3d for k3d's own DNS handling"}},
		{args: []string{"--k3d-dns-resolver", "127.0.0.1"}, want: []string{`"127.0.0.1" is a loopback address`}},
		{env: map[string]string{"OCC_DEVELOPMENT_CLUSTER_PROVIDER": "existing", k3d.EnvDNSResolver: "10.0.0.2"}, want: []string{"configures the k3d cluster occ creates, and --cluster-provider existing creates none"}},
		{env: map[string]string{occdev.EnvWorkspaceChart: dir}, want: []string{`OCC_DEVELOPMENT_OPENSHELL_WORKSPACE_HELM_CHART "` + dir + `" is set without --openshell-helm-chart (OCC_DEVELOPMENT_OPENSHELL_HELM_CHART)`}},
		{args: []string{"--agent-sandbox-manifest", filepath.Join(dir, "missing.yaml")}, want: []string{`--agent-sandbox-manifest "` + filepath.Join(dir, "missing.yaml") + `" does not exist`}},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		args := append([]string{"dev", "up", "--state-dir", stateDir}, tc.args...)
		code, _, errOut := run(t, args...)
		if code != 2 {
			t.Errorf("%v %v: exit %d, want 2; stderr %q", tc.env, tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v %v: stderr lacks %q: %s", tc.env, tc.args, w, errOut)
			}
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
		t.Setenv("OCC_DEVELOPMENT_CLUSTER_PROVIDER", "k3d")
		if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused up created the state directory")
		}
	}
}

// What the dry run can know offline it says: a local --openshell-archive that is not the pinned
// one, a selected Agent Sandbox manifest that is not YAML, and a selected manifest is described
// as selected, never as "the pinned … manifest (verified against its sha256)".
func TestDryRunChecksTheLocalArtifactsOffline(t *testing.T) {
	dir := isolate(t)
	archive := filepath.Join(dir, "openshell.tar.gz")
	if err := os.WriteFile(archive, []byte("not the pinned archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	notYAML := filepath.Join(dir, "sandbox.yaml")
	if err := os.WriteFile(notYAML, []byte("{{ this is: not YAML"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := Execute(context.Background(), []string{"dev", "up", "--dry-run", "-v", "--cluster-provider", "k3d", "--state-dir", filepath.Join(dir, "state"),
		"--openshell-archive", archive, "--agent-sandbox-manifest", notYAML}, strings.NewReader(""), &out, &out)
	text := out.String()
	for _, want := range []string{
		"--openshell-archive (OCC_DEVELOPMENT_OPENSHELL_ARCHIVE) " + archive + ": checksum mismatch",
		"--agent-sandbox-manifest (OCC_DEVELOPMENT_OPENSHELL_AGENT_SANDBOX_MANIFEST) " + notYAML + ":",
		"the objects of the selected Agent Sandbox manifest " + notYAML + " (not checked against the pinned sha256",
	} {
		if code != 1 || !strings.Contains(text, want) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, want, text)
		}
	}
	if strings.Contains(text, "pinned Agent Sandbox v") && strings.Contains(text, "manifest (verified against its sha256") {
		t.Errorf("the selected manifest is described as the pinned, verified one:\n%s", text)
	}
}

// Selected charts are rendered by the dry run as up renders them, when the manifest is local: a
// Gateway chart that hard-codes a tag-based image is a problem of the dry run (exit 1), where it
// used to pass the dry run and be refused only by up.
func TestDryRunRendersSelectedCharts(t *testing.T) {
	dir := isolateDev(t)
	gw, ws, manifest := writeSelections(t, dir)
	kubeconfig := testbed.Kubeconfig(t)
	args := []string{"dev", "up", "--dry-run", "--state-dir", filepath.Join(dir, "dev-state"), "--kubeconfig", kubeconfig,
		"--openshell-helm-chart", gw, "--openshell-workspace-helm-chart", ws, "--agent-sandbox-manifest", manifest}
	if code, out, errOut := run(t, args...); code != 0 {
		t.Fatalf("the fixture's charts: exit %d\n%s\n%s", code, out, errOut)
	}
	// The Gateway's StatefulSet names a tag instead of the values' digest.
	var sts string
	err := filepath.WalkDir(gw, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, rerr := os.ReadFile(path); rerr == nil && strings.Contains(string(data), `image: {{ include "openshell.gatewayImage" . | quote }}`) {
				sts = path
			}
		}
		return err
	})
	if err != nil || sts == "" {
		t.Fatalf("the fixture's Gateway template that names its image was not found (%v)", err)
	}
	data, _ := os.ReadFile(sts)
	if err := os.WriteFile(sts, []byte(strings.Replace(string(data), `image: {{ include "openshell.gatewayImage" . | quote }}`, `image: "ghcr.io/nvidia/openshell/gateway:latest"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, args...)
	if code != 1 || !strings.Contains(out+errOut, "the selected Gateway chart "+gw+": chart") || !strings.Contains(out+errOut, `image "ghcr.io/nvidia/openshell/gateway:latest"`) {
		t.Fatalf("a Gateway chart that runs a tag: exit %d, want 1 naming the chart and the image\n%s\n%s", code, out, errOut)
	}
}
