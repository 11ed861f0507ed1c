package occdev

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// An OpenShell engineer selects their own charts, a local Agent Sandbox manifest and a node
// resolver: the plan loads the charts (the archive steps are replaced by one that uses them),
// reads the manifest instead of downloading it, gives k3d the resolver, records all of them for
// the state, and renders the Gateway chart for the pinned k3s's Kubernetes version.
func TestResolveSelections(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sock := dockerAt("unix:///run/user/1000/docker.sock")
	gw, ws := chartstest.WriteCharts(t, t.TempDir(), nil)
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(chartstest.AgentSandboxManifest()), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock, GatewayChart: gw, WorkspaceChart: ws, AgentSandboxManifest: manifest, ClusterSettings: K3dSettings(k3d.ClusterOptions{DNSResolver: "10.64.0.53"})})
	if err != nil {
		t.Fatal(err)
	}
	if p.GatewayChart != gw || p.WorkspaceChart != ws || p.selectedCharts == nil || p.selectedCharts.Gateway.Name() != "openshell" || p.selectedCharts.Workspace.Name() != "openshell-workspace" ||
		p.AgentSandboxManifest != manifest || p.NodeDNS == nil || p.NodeDNS.Address != "10.64.0.53" || p.NodeDNS.Choice != k3d.DNSGiven || p.clusterSettings.(k3d.Settings).DNS != *p.NodeDNS {
		t.Errorf("plan with selections: %+v", p)
	}
	if got := p.selections(); got == nil || got.GatewayChart != gw || got.WorkspaceChart != ws || got.AgentSandboxManifest != manifest || got.DNSResolver != "10.64.0.53" {
		t.Errorf("recorded selections: %+v", got)
	}
	var names []string
	for _, s := range artifactsLane(p).Steps {
		names = append(names, s.Name)
	}
	if want := "Use the selected Gateway and Workspace charts|Read the selected Agent Sandbox manifest|Check the images of the rendered Gateway chart|Render the Workspace chart"; strings.Join(names, "|") != want {
		t.Errorf("artifacts lane %q, want %q", names, want)
	}
	if r := p.GatewayRender; r.KubernetesVersion != "v1.36.4" || !strings.Contains(r.Source, "docker.io/rancher/k3s:v1.36.4-k3s1") || !strings.Contains(r.APIVersions, manifest) {
		t.Errorf("render plan %+v", r)
	}

	// Without selections: the archive's three steps, the download, and nothing recorded.
	p, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", ClusterProvider: ProviderExisting})
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, s := range artifactsLane(p).Steps {
		names = append(names, s.Name)
	}
	if want := "Fetch and verify the OpenShell source archive|Extract the Helm charts|Package the Gateway and Workspace charts|Fetch and verify the Agent Sandbox manifest|Check the images of the rendered Gateway chart|Render the Workspace chart"; strings.Join(names, "|") != want {
		t.Errorf("artifacts lane %q, want %q", names, want)
	}
	if p.selections() != nil || !strings.Contains(p.GatewayRender.Source, "the existing cluster's version is not known before it is contacted") {
		t.Errorf("plan without selections: selections %+v, render %+v", p.selections(), p.GatewayRender)
	}
}

// Each bad selection is refused before anything runs, naming the flag and variable, the value,
// the rule and the fix (the charts' own refusals are charts.TestSelect's; the archive's here
// shows the plan hands the layer the archive's setting).
func TestResolveSelectionsRefusesBadValues(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sock := dockerAt("unix:///run/user/1000/docker.sock")
	gw, ws := chartstest.WriteCharts(t, t.TempDir(), nil)
	archive := filepath.Join(t.TempDir(), "openshell.tar.gz")
	if err := os.WriteFile(archive, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	untagged := *set
	untagged.K3s.Image.Tag = "latest"
	data, err := yaml.Marshal(&untagged)
	if err != nil {
		t.Fatal(err)
	}
	pinFile := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(pinFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    UpOptions
		want []string
	}{
		{"charts and an archive", UpOptions{GatewayChart: gw, WorkspaceChart: ws, ArchiveFile: archive}, []string{`--openshell-archive (OCC_DEVELOPMENT_OPENSHELL_ARCHIVE) "` + archive + `" is not used when both OpenShell charts are selected`}},
		{"a missing manifest", UpOptions{AgentSandboxManifest: "/nonexistent/sandbox.yaml"}, []string{`--agent-sandbox-manifest (OCC_DEVELOPMENT_OPENSHELL_AGENT_SANDBOX_MANIFEST) "/nonexistent/sandbox.yaml" does not exist`, "leave it unset to download the pinned one"}},
		{"a resolver by name", UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{DNSResolver: "dns.corp.example"})}, []string{`--k3d-dns-resolver (OCC_DEVELOPMENT_K3D_DNS_RESOLVER) "dns.corp.example" is not an IPv4 address`, "or k3d for k3d's own DNS handling"}},
		{"a loopback resolver", UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{DNSResolver: "127.0.0.53"})}, []string{`"127.0.0.53" is a loopback address`}},
		{"a resolver for an existing cluster", UpOptions{ClusterProvider: ProviderExisting, ClusterSettings: K3dSettings(k3d.ClusterOptions{DNSResolver: "10.64.0.53"})}, []string{`--k3d-dns-resolver (OCC_DEVELOPMENT_K3D_DNS_RESOLVER) "10.64.0.53" configures the k3d cluster occ creates`}},
		{"a k3s pin without its release tag", UpOptions{PinFile: pinFile}, []string{`--pin-file (OCC_DEVELOPMENT_PIN_FILE) "` + pinFile + `"`, `k3s.image "docker.io/rancher/k3s:latest@sha256:`, `does not carry a k3s release tag (vMAJOR.MINOR.PATCH-k3sN)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.StateDir, tc.o.Docker = "/var/lib/occ-dev", sock
			_, err := resolvePlan(tc.o)
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("resolvePlan = %v, want an OptionError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
