package emulator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// kubeWorkspace makes a Namespace and a workspace of the same (unique) name, as an operator
// prepares a workspace in OpenShell's operator mode.
func kubeWorkspace(ctx context.Context, t *testing.T, kc kubernetes.Interface, c pb.OpenShellClient) string {
	t.Helper()
	// The apiserver's RuntimeClass admission refuses Pods naming a RuntimeClass that does not
	// exist, so the class the specs use is installed once, as a cluster operator would.
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	if _, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create RuntimeClass gvisor: %v", err)
	}
	name := "gwt-" + uuid.NewString()[:8]
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace %s: %v", name, err)
	}
	createWorkspace(ctx, t, c, name)
	return name
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// harnessSpec is a spec shaped like the enterprise driver's: template labels, runtime class,
// resources and PVC mounts through driver_config.
func harnessSpec(t *testing.T) *pb.SandboxSpec {
	spec := minimalSpec()
	spec.Environment = map[string]string{"HOME": "/sandbox", "SHARED": "spec"}
	spec.Template.Labels = map[string]string{"openclaw.dev/revision": "rev-1"}
	spec.Template.Environment = map[string]string{"SHARED": "template", "FROM_TEMPLATE": "1"}
	spec.Template.DriverConfig = mustStruct(t, map[string]any{
		"kubernetes": map[string]any{
			"containers": map[string]any{"agent": map[string]any{
				"resources": map[string]any{
					"requests": map[string]any{"ephemeral-storage": "256Mi"},
					"limits":   map[string]any{"ephemeral-storage": "1Gi"},
				},
				"volume_mounts": []any{
					map[string]any{"name": "state", "mount_path": "/sandbox/.openshell/workspace", "read_only": false},
					map[string]any{"name": "skills", "mount_path": "/opt/skills"},
				},
			}},
			"volumes": []any{
				map[string]any{"name": "state", "persistent_volume_claim": map[string]any{"claim_name": "harness-state", "read_only": false}},
				map[string]any{"name": "skills", "persistent_volume_claim": map[string]any{"claim_name": "skills"}},
			},
		},
		"docker": "ignored: only the kubernetes key is forwarded",
	})
	return spec
}

// The emulator runs a sandbox the way OpenShell's Kubernetes driver does: a Harness Pod in the
// workspace's Namespace, READY only once that Pod is Ready, and gone after DeleteSandbox.
func TestSandboxHarnessPodLifecycle(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ns := kubeWorkspace(ctx, t, kc, c)

	created, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "harness", WorkspaceScope: scope(ns), Spec: harnessSpec(t), RequestId: rid()})
	mustNot(t, err)
	id := created.GetSandbox().GetMetadata().GetId()
	if created.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING {
		t.Fatalf("create answered phase %v, want PROVISIONING", created.GetSandbox().GetStatus().GetPhase())
	}

	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "harness", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Harness Pod is not in the apiserver: %v", err)
	}
	wantLabels := map[string]string{LabelManagedBy: "openshell", LabelSandboxID: id, LabelSandboxName: "harness", LabelSandboxWorkspace: ns, "openclaw.dev/revision": "rev-1"}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Fatalf("Pod label %s = %q, want %q (labels %v)", k, pod.Labels[k], v, pod.Labels)
		}
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
		t.Fatalf("runtimeClassName = %v, want gvisor", pod.Spec.RuntimeClassName)
	}
	agent := pod.Spec.Containers[0]
	if agent.Name != AgentContainer || agent.Image != "example.com/harness:1" {
		t.Fatalf("container %s image %s", agent.Name, agent.Image)
	}
	env := map[string]string{}
	for _, e := range agent.Env {
		env[e.Name] = e.Value
	}
	if env["SHARED"] != "spec" || env["FROM_TEMPLATE"] != "1" || env["HOME"] != "/sandbox" {
		t.Fatalf("env = %v: the spec's environment must win over the template's", env)
	}
	if q := agent.Resources.Limits[corev1.ResourceEphemeralStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("ephemeral-storage limit = %v", q.String())
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range agent.VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["state"]; m.MountPath != "/sandbox/.openshell/workspace" || m.ReadOnly {
		t.Fatalf("state mount = %+v, want read-write at /sandbox/.openshell/workspace", m)
	}
	if m := mounts["skills"]; !m.ReadOnly {
		t.Fatalf("skills mount = %+v, want read-only by default", m)
	}
	vols := map[string]*corev1.PersistentVolumeClaimVolumeSource{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v.PersistentVolumeClaim
	}
	if v := vols["state"]; v == nil || v.ClaimName != "harness-state" || v.ReadOnly {
		t.Fatalf("state volume = %+v", v)
	}
	if v := vols["skills"]; v == nil || !v.ReadOnly {
		t.Fatalf("skills volume = %+v, want read-only by default", v)
	}

	got, err := c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "harness", WorkspaceScope: scope(ns)})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING {
		t.Fatalf("phase before the Pod is Ready = %v", got.GetSandbox().GetStatus().GetPhase())
	}
	testbed.MarkPodReady(ctx, t, kc, ns, "harness")
	got, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "harness", WorkspaceScope: scope(ns)})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_READY {
		t.Fatalf("phase after the Pod is Ready = %v", got.GetSandbox().GetStatus().GetPhase())
	}
	pod, err = kc.CoreV1().Pods(ns).Get(ctx, "harness", metav1.GetOptions{})
	mustNot(t, err)
	var readySince time.Time
	for _, pc := range pod.Status.Conditions {
		if pc.Type == corev1.PodReady {
			readySince = pc.LastTransitionTime.Time
		}
	}
	conds := got.GetSandbox().GetStatus().GetConditions()
	if len(conds) != 1 || conds[0].GetType() != "Ready" || !conds[0].GetTransitionTime().AsTime().Equal(readySince) {
		t.Fatalf("conditions after the Pod is Ready = %v, want Ready with transition_time %s", conds, readySince)
	}

	del, err := c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "harness", WorkspaceScope: scope(ns), RequestId: rid()})
	mustNot(t, err)
	if del.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED || del.GetSandboxId() != id {
		t.Fatalf("delete = %v, want COMPLETED for %s", del, id)
	}
	if _, err := kc.CoreV1().Pods(ns).Get(ctx, "harness", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Harness Pod survived DeleteSandbox: %v", err)
	}
	_, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "harness", WorkspaceScope: scope(ns)})
	wantCode(t, err, codes.NotFound)
}

// A Pod whose deletion is held (a finalizer here, a 30 s grace in a real cluster) makes
// DeleteSandbox answer ACCEPTED; the sandbox reads DELETING until the Pod is gone.
func TestSandboxDeleteAccepted(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ns := kubeWorkspace(ctx, t, kc, c)
	createSandbox(ctx, t, c, ns, "held")
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
	mustNot(t, err)
	pod.Finalizers = []string{"example.com/hold"}
	_, err = kc.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
	mustNot(t, err)

	del, err := c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "held", WorkspaceScope: scope(ns)})
	mustNot(t, err)
	if del.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_ACCEPTED {
		t.Fatalf("outcome = %v, want ACCEPTED", del.GetOutcome())
	}
	got, err := c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "held", WorkspaceScope: scope(ns)})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_DELETING || got.GetSandbox().GetMetadata().GetId() != del.GetSandboxId() {
		t.Fatalf("sandbox while the Pod lingers = %v", got.GetSandbox())
	}

	pod, err = kc.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
	mustNot(t, err)
	pod.Finalizers = nil
	_, err = kc.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
	mustNot(t, err)
	_, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "held", WorkspaceScope: scope(ns)})
	wantCode(t, err, codes.NotFound)
}

// A workspace without a Namespace is not in the operator allowlist: nothing is created.
func TestSandboxNamespaceMissing(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ws := "gwt-" + uuid.NewString()[:8]
	createWorkspace(ctx, t, c, ws)
	_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", WorkspaceScope: scope(ws), Spec: minimalSpec()})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "is not in the operator namespace allowlist") {
		t.Fatalf("message %q", st.Message())
	}
	if _, ok := s.SandboxID(ws, "box"); ok {
		t.Fatal("a sandbox record was left behind")
	}
}

// A foreign Pod already holds the name: ALREADY_EXISTS, no record, and the Pod is untouched.
func TestSandboxPodNameTaken(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ns := kubeWorkspace(ctx, t, kc, c)
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "box", Namespace: ns, Labels: map[string]string{"owner": "someone-else"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/other:1"}}}}
	_, err := kc.CoreV1().Pods(ns).Create(ctx, foreign, metav1.CreateOptions{})
	mustNot(t, err)
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", WorkspaceScope: scope(ns), Spec: minimalSpec()})
	st := wantCode(t, err, codes.AlreadyExists)
	if st.Message() != "sandbox already exists" {
		t.Fatalf("message %q", st.Message())
	}
	_, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box", WorkspaceScope: scope(ns)})
	wantCode(t, err, codes.NotFound)
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "box", metav1.GetOptions{})
	mustNot(t, err)
	if pod.Labels["owner"] != "someone-else" || pod.Labels[LabelManagedBy] != "" {
		t.Fatalf("the foreign Pod was changed: %v", pod.Labels)
	}
}

// Invalid driver_config is refused before any Pod exists.
func TestSandboxDriverConfigRefused(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ns := kubeWorkspace(ctx, t, kc, c)
	cases := map[string]map[string]any{
		"unknown key":       {"kubernetes": map[string]any{"service_account": "x"}},
		"not an object":     {"kubernetes": "pod"},
		"reserved mount":    {"kubernetes": map[string]any{"volumes": []any{map[string]any{"name": "v", "persistent_volume_claim": map[string]any{"claim_name": "c"}}}, "containers": map[string]any{"agent": map[string]any{"volume_mounts": []any{map[string]any{"name": "v", "mount_path": "/etc/openshell/x"}}}}}},
		"sandbox ancestor":  {"kubernetes": map[string]any{"volumes": []any{map[string]any{"name": "v", "persistent_volume_claim": map[string]any{"claim_name": "c"}}}, "containers": map[string]any{"agent": map[string]any{"volume_mounts": []any{map[string]any{"name": "v", "mount_path": "/"}}}}}},
		"rw on ro volume":   {"kubernetes": map[string]any{"volumes": []any{map[string]any{"name": "v", "persistent_volume_claim": map[string]any{"claim_name": "c"}}}, "containers": map[string]any{"agent": map[string]any{"volume_mounts": []any{map[string]any{"name": "v", "mount_path": "/data", "read_only": false}}}}}},
		"reserved volume":   {"kubernetes": map[string]any{"volumes": []any{map[string]any{"name": "workspace", "persistent_volume_claim": map[string]any{"claim_name": "c"}}}}},
		"undeclared volume": {"kubernetes": map[string]any{"containers": map[string]any{"agent": map[string]any{"volume_mounts": []any{map[string]any{"name": "v", "mount_path": "/data"}}}}}},
	}
	for name, cfg := range cases {
		spec := minimalSpec()
		spec.Template.DriverConfig = mustStruct(t, cfg)
		_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", WorkspaceScope: scope(ns), Spec: spec})
		st, _ := statusOf(err)
		if st == nil || st.Code() != codes.InvalidArgument || reasonOf(st) != ReasonInvalidArgument {
			t.Fatalf("%s: want INVALID_ARGUMENT, got %v", name, err)
		}
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	mustNot(t, err)
	if len(pods.Items) != 0 {
		t.Fatalf("refused creates left %d Pods", len(pods.Items))
	}
}

// A Harness whose main process failed reports ERROR with its exit code; one that exited 0
// reports COMPLETED.
func TestSandboxPhaseFromFinishedPod(t *testing.T) {
	kc := testbed.Client(t)
	s := StartT(t, Options{Kube: kc})
	c := dial(t, s)
	ctx := ctxT(t)
	ns := kubeWorkspace(ctx, t, kc, c)
	createSandbox(ctx, t, c, ns, "failed")
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "failed", metav1.GetOptions{})
	mustNot(t, err)
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: AgentContainer, Image: pod.Spec.Containers[0].Image, ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
	_, err = kc.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	mustNot(t, err)
	got, err := c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "failed", WorkspaceScope: scope(ns)})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_ERROR || got.GetSandbox().GetStatus().ExitCode == nil || got.GetSandbox().GetStatus().GetExitCode() != 137 {
		t.Fatalf("status = %v, want ERROR with exit code 137", got.GetSandbox().GetStatus())
	}
}
