package emulator

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/contract"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Labels and annotations OpenShell's Kubernetes driver puts on sandbox objects.
const (
	LabelManagedBy        = contract.LabelOpenShellManagedBy
	LabelManagedByValue   = contract.OpenShellManagedByValue
	LabelSandboxID        = contract.LabelSandboxID
	LabelSandboxName      = contract.LabelSandboxName
	LabelSandboxWorkspace = contract.LabelSandboxWorkspace
	AnnotationSandboxID   = "openshell.io/sandbox-id"
	// AgentContainer is the name of the Harness container in the sandbox Pod.
	AgentContainer = "agent"
)

// harnessPod renders the Pod OpenShell's driver runs for a sandbox in operator workspace mode:
// bare sandbox name, Namespace named like the workspace, template labels plus the supervisor
// labels (which a template cannot override), and the driver_config's scheduling, resources
// and PVC mounts.
func (s *Server) harnessPod(workspace string, meta *pb.ObjectMeta, spec *pb.SandboxSpec, cfg *kubernetesDriverConfig) (*corev1.Pod, error) {
	tpl := spec.GetTemplate()
	labels := map[string]string{}
	for k, v := range tpl.GetLabels() {
		labels[k] = v
	}
	labels[LabelManagedBy] = LabelManagedByValue
	labels[LabelSandboxID] = meta.GetId()
	labels[LabelSandboxName] = meta.GetName()
	labels[LabelSandboxWorkspace] = workspace
	annotations := map[string]string{}
	for k, v := range tpl.GetAnnotations() {
		annotations[k] = v
	}
	annotations[AnnotationSandboxID] = meta.GetId()

	image := tpl.GetImage()
	if image == "" {
		image = s.opts.DefaultImage
	}
	resources, err := templateResources(tpl.GetResources())
	if err != nil {
		return nil, err
	}
	container := corev1.Container{
		Name:      AgentContainer,
		Image:     image,
		Args:      spec.GetCommand(),
		Env:       mergedEnv(tpl.GetEnvironment(), spec.GetEnvironment()),
		Resources: resources,
		TTY:       spec.GetTty(),
	}
	podSpec := corev1.PodSpec{ServiceAccountName: s.opts.ServiceAccountName}
	if rc := s.opts.DefaultRuntimeClassName; rc != "" {
		podSpec.RuntimeClassName = &rc
	}
	if p := cfg.Pod; p != nil {
		podSpec.NodeSelector = p.NodeSelector
		podSpec.Tolerations = p.Tolerations
		podSpec.PriorityClassName = p.PriorityClassName
		if p.RuntimeClassName != "" {
			rc := p.RuntimeClassName
			podSpec.RuntimeClassName = &rc
		}
	}
	// The template's runtime class takes precedence over driver_config's, which overrides the
	// gateway default.
	if rc := tpl.GetRuntimeClassName(); rc != "" {
		podSpec.RuntimeClassName = &rc
	}
	if tpl.UserNamespaces != nil && tpl.GetUserNamespaces() {
		hostUsers := false
		podSpec.HostUsers = &hostUsers
	}
	if c := cfg.Containers; c != nil && c.Agent != nil {
		if r := c.Agent.Resources; r != nil {
			container.Resources.Requests = overlayQuantities(container.Resources.Requests, r.Requests)
			container.Resources.Limits = overlayQuantities(container.Resources.Limits, r.Limits)
		}
		for _, m := range c.Agent.VolumeMounts {
			container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{
				Name: m.Name, MountPath: m.MountPath, SubPath: m.SubPath, ReadOnly: boolOr(m.ReadOnly, true),
			})
		}
	}
	for _, v := range cfg.Volumes {
		podSpec.Volumes = append(podSpec.Volumes, corev1.Volume{
			Name: v.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: v.PersistentVolumeClaim.ClaimName,
				ReadOnly:  boolOr(v.PersistentVolumeClaim.ReadOnly, true),
			}},
		})
	}
	podSpec.Containers = []corev1.Container{container}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: meta.GetName(), Namespace: workspace, Labels: labels, Annotations: annotations},
		Spec:       podSpec,
	}, nil
}

// mergedEnv lays the spec's environment over the template's, sorted for a stable Pod.
func mergedEnv(template, spec map[string]string) []corev1.EnvVar {
	all := map[string]string{}
	for k, v := range template {
		all[k] = v
	}
	for k, v := range spec {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]corev1.EnvVar, 0, len(keys))
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: all[k]})
	}
	return env
}

// templateResources converts the Kubernetes-shaped template.resources Struct.
func templateResources(s *structpb.Struct) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	for kind, v := range s.GetFields() {
		if kind != "requests" && kind != "limits" {
			continue
		}
		list := corev1.ResourceList{}
		for name, q := range v.GetStructValue().GetFields() {
			qty, err := resource.ParseQuantity(q.GetStringValue())
			if err != nil {
				return out, invalidArgument("spec.template.resources."+kind+"."+name, "template resources %s %s: quantity %q: %v", kind, name, q.GetStringValue(), err)
			}
			list[corev1.ResourceName(name)] = qty
		}
		if kind == "requests" {
			out.Requests = list
		} else {
			out.Limits = list
		}
	}
	return out, nil
}

func overlayQuantities(list corev1.ResourceList, over map[string]string) corev1.ResourceList {
	if len(over) == 0 {
		return list
	}
	if list == nil {
		list = corev1.ResourceList{}
	}
	for name, q := range over {
		list[corev1.ResourceName(name)] = resource.MustParse(q) // validated by parseDriverConfig
	}
	return list
}

// createHarnessPod creates the Pod, mapping apiserver refusals the way the gateway does. The
// namespace is not read first: creating a Pod in a missing namespace is refused as NotFound
// (the only NotFound a create can return), so one request settles both questions.
func (s *Server) createHarnessPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ns := pod.Namespace
	created, err := s.opts.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, failedPrecondition("workspace '%s' is not in the operator namespace allowlist", ns)
	case apierrors.IsAlreadyExists(err):
		return nil, alreadyExists("sandbox already exists")
	case err != nil:
		return nil, status.Errorf(codes.Internal, "create sandbox failed: create Pod %s/%s: %v", ns, pod.Name, err)
	}
	return created, nil
}

// podObservation is what the gateway learns about a sandbox from its Pod.
type podObservation struct {
	phase    pb.SandboxPhase
	cond     *pb.SandboxCondition
	exitCode *int32
	gone     bool
}

// observePod derives the sandbox phase from the Harness Pod. READY needs the Pod's Ready
// condition; the emulator treats a Ready Pod as a connected supervisor.
func (s *Server) observePod(ctx context.Context, workspace string, sb *sandboxRec) (podObservation, error) {
	pod, err := s.opts.Kube.CoreV1().Pods(workspace).Get(ctx, sb.meta.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && pod.UID != sb.podUID) {
		if sb.deleting {
			return podObservation{gone: true}, nil
		}
		return podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_ERROR, cond: condition("False", "PodMissing", "the sandbox Pod no longer exists")}, nil
	}
	if err != nil {
		return podObservation{}, status.Errorf(codes.Unavailable, "read sandbox Pod %s/%s: %v", workspace, sb.meta.GetName(), err)
	}
	if sb.deleting || pod.DeletionTimestamp != nil {
		return podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_DELETING, cond: condition("False", "Deleting", "the sandbox Pod is being deleted")}, nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		zero := int32(0)
		return podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_COMPLETED, exitCode: &zero, cond: condition("False", "Completed", "the main process exited 0")}, nil
	case corev1.PodFailed:
		obs := podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_ERROR, cond: condition("False", "PodFailed", pod.Status.Message)}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == AgentContainer && cs.State.Terminated != nil {
				code := cs.State.Terminated.ExitCode
				obs.exitCode = &code
			}
		}
		return obs, nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready := condition("True", "Ready", "")
			// The gateway reports when the condition last changed (transition_time, field 105);
			// the Pod's own Ready transition is the emulator's best knowledge of it.
			if !c.LastTransitionTime.IsZero() {
				ready.TransitionTime = timestamppb.New(c.LastTransitionTime.Time)
			}
			return podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_READY, cond: ready}, nil
		}
	}
	return podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING, cond: condition("False", "SupervisorNotConnected", fmt.Sprintf("waiting for Pod %s/%s to become Ready", workspace, pod.Name))}, nil
}

// deleteHarnessPod deletes the sandbox's own Pod (by UID, so a same-named replacement is never
// touched) and reports whether it is gone already.
func (s *Server) deleteHarnessPod(ctx context.Context, workspace string, sb *sandboxRec) (bool, error) {
	pods := s.opts.Kube.CoreV1().Pods(workspace)
	uid := sb.podUID
	err := pods.Delete(ctx, sb.meta.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return false, status.Errorf(codes.Internal, "delete sandbox failed: delete Pod %s/%s: %v", workspace, sb.meta.GetName(), err)
	}
	pod, err := pods.Get(ctx, sb.meta.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && pod.UID != uid) {
		return true, nil
	}
	if err != nil {
		return false, status.Errorf(codes.Internal, "delete sandbox failed: read Pod %s/%s: %v", workspace, sb.meta.GetName(), err)
	}
	return false, nil
}

func condition(st, reason, msg string) *pb.SandboxCondition {
	return &pb.SandboxCondition{Type: "Ready", Status: st, Reason: reason, Message: msg}
}
