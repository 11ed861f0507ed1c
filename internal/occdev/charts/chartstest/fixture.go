// Package chartstest generates the pinned OpenShell artifacts for tests: a source archive
// holding small but realistic Gateway and Workspace charts, an Agent Sandbox manifest, and a
// pin set whose checksums match them. Everything is written at test time; no binary fixture is
// committed.
package chartstest

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/artifacts/artifactstest"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Options vary the generated archive.
type Options struct {
	// Files adds or replaces archive files, keyed by path relative to the archive's top
	// directory (for example "deploy/helm/openshell-workspace/templates/extra.yaml"). An empty
	// value removes the file.
	Files map[string]string
}

// Fixture is a generated archive and manifest with the pins that verify them.
type Fixture struct {
	// ArchivePath is the OpenShell source .tar.gz.
	ArchivePath string
	// ManifestPath is the Agent Sandbox manifest.
	ManifestPath string
	// Pins is the embedded pin set with both sha256 values (and URLs, on a host that never
	// resolves) replaced to match the generated files; images and names are unchanged.
	Pins *pins.Set
}

// New writes the fixture into dir.
func New(t testing.TB, dir string, o Options) *Fixture {
	t.Helper()
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	top := set.OpenShell.SourceArchive.TopDirectory
	files := map[string]string{
		"README.md":  "# OpenShell (test fixture)\n",
		"Cargo.toml": "[workspace]\n",
	}
	for rel, body := range gatewayChart() {
		files[set.OpenShell.Charts.Gateway+"/"+rel] = body
	}
	for rel, body := range workspaceChart() {
		files[set.OpenShell.Charts.Workspace+"/"+rel] = body
	}
	for rel, body := range o.Files {
		if body == "" {
			delete(files, rel)
			continue
		}
		files[rel] = body
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	// Directory entries first, as git archive writes them.
	dirs := map[string]bool{}
	entries := []artifactstest.Entry{artifactstest.Dir(top + "/")}
	for _, name := range names {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)
	for _, d := range dirNames {
		entries = append(entries, artifactstest.Dir(top+"/"+d+"/"))
	}
	for _, name := range names {
		entries = append(entries, artifactstest.File(top+"/"+name, files[name]))
	}

	archive := filepath.Join(dir, "openshell-source.tar.gz")
	set.OpenShell.SourceArchive.SHA256 = artifactstest.WriteTarGz(t, archive, entries)
	set.OpenShell.SourceArchive.URL = "https://fixture.invalid/OpenShell-" + set.OpenShell.Version + ".tar.gz"

	manifest := filepath.Join(dir, "agent-sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(AgentSandboxManifest()), 0o600); err != nil {
		t.Fatal(err)
	}
	set.AgentSandbox.Manifest.SHA256 = artifactstest.SHA256File(t, manifest)
	set.AgentSandbox.Manifest.URL = "https://fixture.invalid/agent-sandbox/sandbox.yaml"
	set.Source = "chartstest fixture"
	return &Fixture{ArchivePath: archive, ManifestPath: manifest, Pins: set}
}

// AgentSandboxManifestWithoutCRDs is AgentSandboxManifest without its CustomResourceDefinition:
// a manifest a cluster serves no Sandbox API after.
func AgentSandboxManifestWithoutCRDs() string {
	var kept []string
	for _, doc := range strings.Split(AgentSandboxManifest(), "---\n") {
		if !strings.Contains(doc, "kind: CustomResourceDefinition") {
			kept = append(kept, doc)
		}
	}
	return strings.Join(kept, "---\n")
}

// AgentSandboxManifest is a small stand-in for the Agent Sandbox release manifest: its namespace,
// the Sandbox CRD, the controller's ServiceAccount and RBAC, and the controller Deployment
// agent-sandbox-controller that `up` waits for.
func AgentSandboxManifest() string {
	return strings.TrimLeft(`
apiVersion: v1
kind: Namespace
metadata:
  name: agent-sandbox-system
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sandboxes.agents.x-k8s.io
spec:
  group: agents.x-k8s.io
  names:
    kind: Sandbox
    listKind: SandboxList
    plural: sandboxes
    singular: sandbox
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent-sandbox-controller
  namespace: agent-sandbox-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: agent-sandbox-controller
rules:
  - apiGroups: ["agents.x-k8s.io"]
    resources: ["sandboxes", "sandboxes/status"]
    verbs: ["get", "list", "watch", "update", "patch"]
  - apiGroups: [""]
    resources: ["pods", "services", "persistentvolumeclaims"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: agent-sandbox-controller
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: agent-sandbox-controller
subjects:
  - kind: ServiceAccount
    name: agent-sandbox-controller
    namespace: agent-sandbox-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent-sandbox-controller
  namespace: agent-sandbox-system
spec:
  replicas: 1
  selector:
    matchLabels:
      app: agent-sandbox-controller
  template:
    metadata:
      labels:
        app: agent-sandbox-controller
    spec:
      serviceAccountName: agent-sandbox-controller
      containers:
        - name: controller
          image: registry.k8s.io/agent-sandbox/agent-sandbox-controller:v0.5.2
`, "\n")
}

// WriteCharts writes the Gateway and Workspace charts as chart directories under dir, as an
// OpenShell checkout holds them (deploy/helm/openshell, deploy/helm/openshell-workspace), and
// returns their paths: what an OpenShell engineer selects with the local chart settings.
// files replaces files as Options.Files does, keyed by path inside dir.
func WriteCharts(t testing.TB, dir string, files map[string]string) (gateway, workspace string) {
	t.Helper()
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	for rel, body := range gatewayChart() {
		all[set.OpenShell.Charts.Gateway+"/"+rel] = body
	}
	for rel, body := range workspaceChart() {
		all[set.OpenShell.Charts.Workspace+"/"+rel] = body
	}
	for rel, body := range files {
		if body == "" {
			delete(all, rel)
			continue
		}
		all[rel] = body
	}
	for rel, body := range all {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.FromSlash(set.OpenShell.Charts.Gateway)), filepath.Join(dir, filepath.FromSlash(set.OpenShell.Charts.Workspace))
}
