package platform

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
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
// release ("Helm release NAMESPACE/NAME"), and its Service by the type and port the install
// gives it.
func TestGatewayDescriptionNamesTheRelease(t *testing.T) {
	g := GatewayInstall{Namespace: "openshell", ServiceType: corev1.ServiceTypeNodePort, NodePort: 30080, PullPolicy: corev1.PullNever}
	d := g.Describe("0.1.0", nil)
	if len(d.Objects) != 1 || d.Objects[0].Kind != "Helm release" || d.Objects[0].Namespace != "openshell" || d.Objects[0].Name != GatewayRelease {
		t.Fatalf("described objects %+v; want the Gateway's Helm release", d.Objects)
	}
	want := []string{
		"Helm release openshell/" + GatewayRelease + " (Helm SDK; OpenShell 0.1.0 images by digest, pullPolicy Never: )",
		"Service openshell/" + GatewayServiceName + " of type NodePort on port 30080",
	}
	if !slices.Equal(d.Creates, want) {
		t.Errorf("described lines %q, want %q", d.Creates, want)
	}
}
