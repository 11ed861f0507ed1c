package compute

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/testbed"
)

func devInstallationText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// The development Installation's namespace resources become the baseline; a misspelled key or
// a bad quantity under resources.namespace is refused rather than silently defaulted.
func TestBaselineFromInstallation(t *testing.T) {
	y := devInstallationText(t)
	y = strings.Replace(y, "pods: \"10\"", "pods: \"12\"", 1)
	in, err := installation.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	b, err := BaselineFromInstallation(in)
	if err != nil {
		t.Fatal(err)
	}
	pods := b.Quota[corev1.ResourcePods]
	mem := b.DefaultLimits[corev1.ResourceMemory]
	if pods.String() != "12" || mem.String() != "2Gi" {
		t.Fatalf("baseline = %+v", b)
	}

	for _, tc := range []struct{ old, new, want string }{
		{"containerDefaults:", "containerDefault:", "field containerDefault not found"},
		{"pods: \"10\"", "pods: ten", `quota.pods "ten" is not a Kubernetes quantity`},
		{"requests: {cpu: 100m, memory: 256Mi}\n            limits: {cpu: \"2\", memory: 2Gi}", "requests: {cpu: \"4\", memory: 256Mi}\n            limits: {cpu: \"2\", memory: 2Gi}", "request cpu=4 exceeds its limit 2"},
	} {
		y := strings.Replace(devInstallationText(t), tc.old, tc.new, 1)
		in, err := installation.Parse([]byte(y))
		if err != nil {
			t.Fatalf("%s: the Installation itself was refused: %v", tc.want, err)
		}
		if _, err := BaselineFromInstallation(in); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), namespaceResourcesPath) {
			t.Errorf("err = %v, want %q under %s", err, tc.want, namespaceResourcesPath)
		}
	}
}

// A cleanup by physical name reads the OCC Namespace ID from the namespace's label, and refuses
// a namespace whose label does not derive its name.
func TestNamespaceIDFromArgument(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	if id, err := NamespaceIDFromArgument(ctx, c, "ns_plain_id"); err != nil || id != "ns_plain_id" {
		t.Fatalf("ID argument: %q %v", id, err)
	}
	comp := &Compute{Kube: c, Driver: &recordingDriver{}}
	ns, err := comp.PrepareNamespace(ctx, "ns_by_physical_name")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := NamespaceIDFromArgument(ctx, c, ns.Name); err != nil || id != "ns_by_physical_name" {
		t.Fatalf("physical name: %q %v", id, err)
	}
	forged := "oce-000000000000000"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: forged, Labels: map[string]string{
		driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespace: "ns_by_physical_name",
	}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NamespaceIDFromArgument(ctx, c, forged); err == nil || !strings.Contains(err.Error(), "does not derive its name") {
		t.Fatalf("forged label: %v", err)
	}
	if _, err := NamespaceIDFromArgument(ctx, c, "oce-111111111111111"); err == nil || !strings.Contains(err.Error(), "pass the OCC Namespace ID instead") {
		t.Fatalf("absent namespace: %v", err)
	}
}

// Status of a revision whose namespace was never prepared: nothing exists, nothing fails.
func TestObserveUnpreparedRevision(t *testing.T) {
	rf := loadExample(t, "openclaw.yaml")
	rf.NamespaceID = "ns_never_prepared"
	comp := &Compute{Kube: testbed.Client(t), Driver: &recordingDriver{}}
	obs, err := comp.Observe(context.Background(), rf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Namespace.State != Absent || obs.Pods == nil || len(obs.Pods) != 0 || len(obs.Problems) != 0 || obs.Namespace.Name != mustName(t, "ns_never_prepared") {
		t.Fatalf("observation = %+v", obs)
	}
}
