package occdev_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/step"
)

// plannedStep is the step of steps named name, in whatever lane it runs.
func plannedStep(t *testing.T, steps []occdev.PlannedStep, name string) occdev.PlannedStep {
	t.Helper()
	var found []occdev.PlannedStep
	var walk func([]occdev.PlannedStep)
	walk = func(steps []occdev.PlannedStep) {
		for _, s := range steps {
			if s.Name == name {
				found = append(found, s)
			}
			for _, l := range s.Lanes {
				walk(l.Steps)
			}
		}
	}
	walk(steps)
	if len(found) != 1 {
		t.Fatalf("%d steps named %q", len(found), name)
	}
	return found[0]
}

// selectManifest writes yaml as a local Agent Sandbox manifest and selects it in opts
// (--agent-sandbox-manifest); it returns the file's path.
func selectManifest(t *testing.T, opts *occdev.UpOptions, yaml string) string {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.AgentSandboxManifest = manifest
	return manifest
}

// objectNames are objs as "Kind namespace/name".
func objectNames(objs []step.Object) []string {
	return refs(objs, func(o step.Object) (string, string, string) { return o.Kind, o.Namespace, o.Name })
}

// refs are xs as "Kind namespace/name", by what ref says of each.
func refs[T any](xs []T, ref func(T) (kind, namespace, name string)) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		k, ns, n := ref(x)
		out = append(out, k+" "+ns+"/"+n)
	}
	return out
}

// A tool reads `occ dev up --control-plane kubernetes --dry-run -o json` for what `up` will make:
// the cache file of the archive, the extracted tree, the platform namespace, every object of the
// selected Agent Sandbox manifest in the order it is applied, the Gateway's release and Service,
// and the key files, each a typed entry named as the run names it.
func TestKubernetesDryRunNamesWhatTheRunMakesAsTypedItems(t *testing.T) {
	opts := fixtureOptions(t, occdev.ControlPlaneKubernetes)
	sandbox, err := os.ReadFile(filepath.Join("platform", "testdata", "agent-sandbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := selectManifest(t, &opts, string(sandbox))
	dr := planUp(t, opts)
	ns := dr.Plan.Namespace

	archive := plannedStep(t, dr.Steps, "Fetch and verify the OpenShell source archive")
	if len(archive.Files) != 1 || filepath.Dir(archive.Files[0].Path) != filepath.Join(opts.CacheDir, "sha256") || archive.Files[0].Mode != "0600" {
		t.Errorf("the archive's fetch describes %+v, want its file in the cache %s", archive.Files, opts.CacheDir)
	}
	extract := plannedStep(t, dr.Steps, "Extract the Helm charts")
	if len(extract.Files) != 1 || extract.Files[0].Path != filepath.Join(opts.StateDir, artifacts.HelmDir) || extract.Files[0].Kind != "directory" {
		t.Errorf("the extraction describes %+v", extract.Files)
	}
	pack := plannedStep(t, dr.Steps, "Package the Gateway and Workspace charts")
	if len(pack.Files) != 1 || pack.Files[0].Path != filepath.Join(opts.StateDir, charts.PackagedDir) {
		t.Errorf("the packaging describes %+v", pack.Files)
	}
	if got := objectNames(plannedStep(t, dr.Steps, "Create the platform namespace").Objects); !slices.Equal(got, []string{"Namespace /" + ns}) {
		t.Errorf("the namespace step describes %q, want the plan's namespace %s", got, ns)
	}
	applied := plannedStep(t, dr.Steps, "Apply the Agent Sandbox manifest")
	want := []string{"Namespace /agent-sandbox-system", "CustomResourceDefinition /sandboxes.agents.x-k8s.io", "Deployment agent-sandbox-system/agent-sandbox-controller"}
	if got := objectNames(applied.Objects); !slices.Equal(got, want) {
		t.Errorf("the Agent Sandbox step describes %q, want the manifest's objects in the order they are applied %q", got, want)
	}
	if !strings.Contains(applied.Note, manifest) || !slices.Equal(applied.Creates, []string{"Namespace agent-sandbox-system", "CustomResourceDefinition sandboxes.agents.x-k8s.io", "Deployment agent-sandbox-system/agent-sandbox-controller"}) {
		t.Errorf("the Agent Sandbox step prints %q · %q", applied.Creates, applied.Note)
	}
	gateway := objectNames(plannedStep(t, dr.Steps, "Install the OpenShell Gateway chart").Objects)
	if !slices.Contains(gateway, "Helm release "+ns+"/"+occdev.GatewayRelease) || !slices.Contains(gateway, "Service "+ns+"/"+occdev.GatewayServiceName) {
		t.Errorf("the Gateway step describes %q", gateway)
	}
	doc := dr.Plan.OCE.(*kubeprofile.Document)
	var imported []string
	for _, img := range plannedStep(t, dr.Steps, "Import the control plane's images into the cluster").Images {
		imported = append(imported, img.Reference)
	}
	if want := []string{controlplane.DefaultControllerTag, controlplane.DefaultRuntimeTag, doc.Kubernetes.PostgresImage}; !slices.Equal(imported, want) {
		t.Errorf("the import describes images %q, want %q", imported, want)
	}
	key := plannedStep(t, dr.Steps, "Copy and verify the bootstrap service key")
	var files []string
	for _, f := range key.Files {
		files = append(files, f.Path+" "+f.Mode)
	}
	if !slices.Contains(files, doc.KeyFile+" 0600") || len(key.Objects) != 1 || key.Objects[0].Namespace != ns {
		t.Errorf("the key step describes files %q and objects %q, want the key file %s and the reader Pod in %s", files, objectNames(key.Objects), doc.KeyFile, ns)
	}
}

// The same for the Compose profile: the project, its network (the name k3d joins), its
// volumes and its published ports are typed engine objects, the snapshot and the key typed
// files.
func TestComposeDryRunNamesWhatTheRunMakesAsTypedItems(t *testing.T) {
	opts := fixtureOptions(t, occdev.ControlPlaneCompose)
	dr := planUp(t, opts)
	doc := dr.Plan.OCE.(*composeprofile.Document)
	project := doc.Compose.Project

	snapshot := plannedStep(t, dr.Steps, "Write the Compose snapshot and record the project")
	if len(snapshot.Files) != 2 || snapshot.Files[0].Path != filepath.Join(opts.StateDir, compose.SnapshotName) || snapshot.Files[0].Mode != "0600" {
		t.Errorf("the snapshot step describes %+v", snapshot.Files)
	}
	data := plannedStep(t, dr.Steps, "Start postgres, migrate and bootstrap")
	byKind := map[string][]string{}
	for _, e := range data.EngineObjects {
		byKind[e.Kind] = append(byKind[e.Kind], e.Name)
	}
	if !slices.Equal(byKind["Compose project"], []string{project}) || !slices.Equal(byKind["network"], []string{compose.NetworkName(project)}) {
		t.Errorf("the data services describe %v, want project %s and its network %s", byKind, project, compose.NetworkName(project))
	}
	if len(byKind["volume"]) != len(doc.Compose.Volumes) || len(byKind["volume"]) == 0 {
		t.Errorf("the data services describe volumes %q, the plan has %q", byKind["volume"], doc.Compose.Volumes)
	}
	for _, v := range byKind["volume"] {
		if !strings.HasPrefix(v, project+"_") {
			t.Errorf("volume %s is not the project's", v)
		}
	}
	if len(byKind["published port"]) != 1 {
		t.Errorf("the data services describe published ports %q, want postgres's", byKind["published port"])
	}
	if len(data.Creates) != len(data.EngineObjects) {
		t.Errorf("%d printed lines for %d typed engine objects", len(data.Creates), len(data.EngineObjects))
	}
	api := plannedStep(t, dr.Steps, "Start the controller and worker-kubernetes")
	var services []string
	for _, e := range api.EngineObjects {
		if e.Kind == "service" {
			services = append(services, e.Name)
		}
	}
	if !slices.Equal(services, []string{compose.ServiceController, compose.ServiceWorker}) {
		t.Errorf("the API step describes services %q", services)
	}
	var imported []string
	for _, img := range plannedStep(t, dr.Steps, "Verify the control plane's images in the node and tag them").Images {
		imported = append(imported, img.Reference)
	}
	if !slices.Equal(imported, []string{controlplane.DefaultRuntimeTag}) {
		t.Errorf("the verification describes images %q, want the Agent runtime", imported)
	}
	key := plannedStep(t, dr.Steps, "Copy and verify the bootstrap service key")
	if len(key.Files) != 1 || key.Files[0].Path != doc.KeyFile || key.Files[0].Mode != "0600" {
		t.Errorf("the key step describes %+v, want the key file %s", key.Files, doc.KeyFile)
	}
}
