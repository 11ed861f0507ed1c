package platform

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Each platform step's dry run names exactly the objects its Ensure or Apply function creates,
// as their state records name them, and the JWT Secret is described by the keys the generated
// Secret has, each with a value, never by a value.
func TestPlatformDescriptionsNameTheAppliedObjects(t *testing.T) {
	const ns = "openshell"
	secret, err := JWTSecret(ns)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		described []step.Object
		applied   []runtime.Object
	}{
		{"namespace", DescribeNamespace(ns), []runtime.Object{Namespace(ns)}},
		{"runtime class", DescribeRuntimeClass(), []runtime.Object{RuntimeClass()}},
		{"JWT Secret", DescribeJWTSecret(ns), []runtime.Object{secret}},
		{"policies", DescribeDevelopmentPolicies(ns), DevelopmentPolicies(ns)},
	}
	for _, c := range cases {
		if len(c.described) != len(c.applied) {
			t.Fatalf("%s: %d described, %d applied", c.name, len(c.described), len(c.applied))
		}
		for i, o := range c.applied {
			ref, err := kubeobj.RefOf(o)
			if err != nil {
				t.Fatal(err)
			}
			d := c.described[i]
			if d.Kind != ref.Kind || d.Namespace != ref.Namespace || d.Name != ref.Name {
				t.Errorf("%s: described %s, applied %s %s/%s", c.name, d, ref.Kind, ref.Namespace, ref.Name)
			}
		}
	}
	keys := strings.Join(slices.Sorted(maps.Keys(secret.Data)), ", ")
	note := DescribeJWTSecret(ns)[0].Note
	if !strings.HasPrefix(note, "keys "+keys+";") {
		t.Errorf("JWT Secret note %q; want it to start with the generated keys %q", note, keys)
	}
	for k, v := range secret.Data {
		// The dry run lists the keys of the Secret built without material; a key that
		// JWTSecret leaves empty would be described but not written.
		if len(v) == 0 {
			t.Errorf("the generated JWT Secret's key %s is empty", k)
			continue
		}
		if strings.Contains(note, string(v)) {
			t.Errorf("the JWT Secret's description holds one of its values")
		}
	}
	if got := DescribeRuntimeClass()[0].String(); got != "RuntimeClass "+RuntimeClassName+" (handler "+RuntimeClassHandler+")" {
		t.Errorf("RuntimeClass line %q", got)
	}
}

// The Gateway's dry run names its Helm release as a typed object, as the state records a
// release ("Helm release NAMESPACE/NAME"), and its Service, by the name the install reads it
// back under, with the type and port the install gives it; the images the release's line names
// are typed images, each the digest reference the chart's values carry under its key.
func TestGatewayDescriptionNamesTheRelease(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	g := GatewayInstall{Namespace: "openshell", Images: set.OpenShell.Images, ServiceType: corev1.ServiceTypeNodePort, NodePort: 30080, PullPolicy: corev1.PullNever}
	d := g.Describe("0.1.0")
	if len(d.Objects) != 2 || d.Objects[0].Kind != "Helm release" || d.Objects[0].Namespace != "openshell" || d.Objects[0].Name != GatewayRelease ||
		d.Objects[1].Kind != "Service" || d.Objects[1].Namespace != "openshell" || d.Objects[1].Name != GatewayServiceName {
		t.Fatalf("described objects %+v; want the Gateway's Helm release and Service", d.Objects)
	}
	values, err := GatewayValues(g)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, img := range d.Images {
		key, _, _ := strings.Cut(img.Note, ".image")
		v, ok := values[key].(map[string]any)["image"].(map[string]any)
		if !ok || img.Reference != v["registry"].(string)+"/"+v["repository"].(string)+"@"+v["digest"].(string) || v["pullPolicy"] != "Never" {
			t.Errorf("typed image %+v; the values carry %s: %v", img, key, values[key])
		}
		refs = append(refs, img.Reference)
	}
	if len(d.Images) != len(set.GatewayImages()) || len(d.Images) == 0 {
		t.Errorf("%d typed images, the pins say the Gateway runs %d", len(d.Images), len(set.GatewayImages()))
	}
	want := []string{
		"Helm release openshell/" + GatewayRelease + " (Helm SDK; OpenShell 0.1.0 images by digest, pullPolicy Never: " + strings.Join(refs, ", ") + ")",
		"Service openshell/" + GatewayServiceName + " (of type NodePort on port 30080)",
	}
	if !slices.Equal(d.Creates, want) {
		t.Errorf("described lines %q, want %q", d.Creates, want)
	}
}

// `up --dry-run` with a local Agent Sandbox manifest names its objects in the order the run
// applies them (namespaces, then CRDs, then the rest) and says where they come from; without
// the objects (the pinned manifest not yet downloaded) it says what the manifest holds.
func TestAgentSandboxApplyDescribesTheManifestsObjects(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "agent-sandbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := artifacts.ParseYAML(data, "sandbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := AgentSandboxManifest{Pin: pins.AgentSandbox{Version: "v0.5.2"}, File: "/work/sandbox.yaml"}
	d := m.DescribeApply(objs)
	want := []string{"Namespace agent-sandbox-system", "CustomResourceDefinition sandboxes.agents.x-k8s.io", "Deployment agent-sandbox-system/agent-sandbox-controller"}
	if !slices.Equal(d.Creates, want) || len(d.Objects) != 3 || !strings.Contains(d.Note, "/work/sandbox.yaml") {
		t.Errorf("described %q (%d objects) · %q, want %q from the selected file", d.Creates, len(d.Objects), d.Note, want)
	}
	m.File = ""
	if d := m.DescribeApply(nil); len(d.Objects) != 0 || len(d.Creates) != 1 || !strings.Contains(d.Creates[0], "pinned Agent Sandbox v0.5.2 manifest") {
		t.Errorf("without the objects: %+v", d)
	}
}
