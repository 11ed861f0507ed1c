package cluster_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// node creates a node on the real apiserver with the given Ready condition (none when status
// is empty) and kubelet version, as a kubelet would report it, and removes it after the test.
func node(t *testing.T, kube kubernetes.Interface, name string, status corev1.ConditionStatus, reason, version string) {
	t.Helper()
	ctx := context.Background()
	n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.NodeInfo.KubeletVersion = version
	if status != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
			{Type: corev1.NodeReady, Status: status, Reason: reason, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
		}
	}
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReadFactsFromTheAPIServer reads the nodes a real apiserver holds: ready, not ready with
// the kubelet's reason, and one whose kubelet never reported; sorted by name, printed in the
// status layout, and the first node that is not ready makes the environment degraded.
func TestReadFactsFromTheAPIServer(t *testing.T) {
	kube := testbed.Client(t)
	node(t, kube, "k3d-facts-server-0", corev1.ConditionTrue, "KubeletReady", "v1.33.4+k3s1")
	node(t, kube, "k3d-facts-agent-1", corev1.ConditionFalse, "KubeletNotReady", "v1.33.4+k3s1")
	node(t, kube, "k3d-facts-agent-2", "", "", "")

	f := cluster.ReadFacts(context.Background(), kube)
	want := []cluster.Node{
		{Name: "k3d-facts-agent-1", NotReady: "KubeletNotReady", KubeletVersion: "v1.33.4+k3s1"},
		{Name: "k3d-facts-agent-2", NotReady: "no Ready condition"},
		{Name: "k3d-facts-server-0", Ready: true, KubeletVersion: "v1.33.4+k3s1"},
	}
	if len(f.Nodes) != len(want) || f.FactsProblem != "" {
		t.Fatalf("facts = %+v, want nodes %+v", f, want)
	}
	for i := range want {
		if f.Nodes[i] != want[i] {
			t.Errorf("node %d = %+v, want %+v", i, f.Nodes[i], want[i])
		}
	}
	if got, want := f.Degraded(), "the node k3d-facts-agent-1 is not ready (KubeletNotReady)"; got != want {
		t.Errorf("Degraded() = %q, want %q", got, want)
	}
	var out bytes.Buffer
	f.PrintStatus(&out)
	wantOut := "Nodes:         k3d-facts-agent-1 (not ready: KubeletNotReady, v1.33.4+k3s1)\n" +
		"               k3d-facts-agent-2 (not ready: no Ready condition)\n" +
		"               k3d-facts-server-0 (Ready, v1.33.4+k3s1)\n"
	if out.String() != wantOut {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), wantOut)
	}
}

// TestReadFactsOfAClusterThatRefuses reads as a user the real apiserver's RBAC gives no right
// to list nodes: the refusal is the facts' problem, not an error of the whole status, and marks
// nothing degraded.
func TestReadFactsOfAClusterThatRefuses(t *testing.T) {
	cfg := testbed.Config(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "occ-facts-nobody"}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := cluster.ReadFacts(context.Background(), kube)
	if !strings.Contains(f.FactsProblem, "forbidden") || len(f.Nodes) != 0 || f.Degraded() != "" {
		t.Fatalf("facts = %+v", f)
	}
	var out bytes.Buffer
	f.PrintStatus(&out)
	if !strings.HasPrefix(out.String(), "Nodes:         unknown (list the nodes: ") {
		t.Errorf("printed %q", out.String())
	}
}
