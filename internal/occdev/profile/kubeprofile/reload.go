package kubeprofile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// installationDigestAnnotation is set on the Pod template of a Deployment that mounts the
// Installation, to the sha256 of the Installation it should run with: a reload that rewrites
// the Installation changes it, which rolls the Deployment out, and a repeated reload finds it
// equal and rolls nothing.
const installationDigestAnnotation = "occ.openclaw.dev/installation-sha256"

// reloadFieldManager is the field manager of the patches reload makes.
const reloadFieldManager = "occ-dev-reload"

// ReloadSteps roll the in-cluster control plane onto the rebuilt images: the Installation (the
// file and its Secret) names the rebuilt Agent runtime, the Deployments run the rebuilt images by
// their in-cluster digests, and their rollouts are waited for.
func (Profile) ReloadSteps(state.State) []profile.ReloadStep {
	k := &reload{}
	return []profile.ReloadStep{
		{Name: "Point the Installation at the rebuilt Agent runtime", Run: rewriteKubeInstallation},
		{Name: "Upgrade the OCE release onto the rebuilt controller", Run: upgradeOCERelease},
		{Name: "Point the Deployments at the rebuilt images", Run: k.patchDeployments},
		{Name: "Wait for the Deployments to roll out", Run: k.waitForRollouts},
	}
}

// reload is what the steps of one reload share: the Deployments whose rollout is waited for.
type reload struct {
	watch []string
}

// rebuiltImage is the rebuilt image of role, if the reload rebuilt it.
func rebuiltImage(env profile.ReloadEnv, role string) (profile.Rebuilt, bool) {
	for _, b := range env.Rebuilt() {
		if b.Role == role {
			return b, true
		}
	}
	return profile.Rebuilt{}, false
}

// runtimeChanged says the rebuilt Agent runtime is not the recorded one.
func runtimeChanged(env profile.ReloadEnv) bool {
	b, ok := rebuiltImage(env, oce.RoleRuntime)
	return ok && b.Changed
}

// rewriteKubeInstallation rewrites the Installation file and its Secret, whose exact bytes the
// control plane reads.
func rewriteKubeInstallation(ctx context.Context, env profile.ReloadEnv, _ progress.Reporter) error {
	data, changed, err := env.RewriteInstallation()
	if err != nil || !changed {
		return err
	}
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{kubernetes.InstallationKey: data}})
	if err != nil {
		return err
	}
	ns := env.Recorded().PlatformNamespace
	if _, err := env.Conn().Kube.CoreV1().Secrets(ns).Patch(ctx, kubernetes.InstallationSecret, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: reloadFieldManager}); err != nil {
		return fmt.Errorf("update Secret %s/%s with the rewritten Installation: %w", ns, kubernetes.InstallationSecret, err)
	}
	return nil
}

// upgradeOCERelease upgrades the OCE chart's release onto the rebuilt controller, so Helm's
// record of the release names what its Deployments run and a later upgrade starts from it. A
// release that already names it (an unchanged controller, or a reload interrupted after this
// step) is not upgraded again. When the reload is limited to some services and another
// Deployment runs the controller too, the upgrade would roll that one as well: the release is
// left on the previous controller (the next reload of every service upgrades it) and only the
// chosen Deployments are pointed at the rebuilt one.
func upgradeOCERelease(ctx context.Context, env profile.ReloadEnv, rep progress.Reporter) error {
	b, ok := rebuiltImage(env, oce.RoleController)
	if !ok {
		return nil
	}
	l, chosen, conn := b.Image, env.Chosen(), env.Conn()
	ns := env.Recorded().PlatformNamespace
	list, err := conn.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the Deployments of %s: %w", ns, err)
	}
	next := map[string]string{l.Pin.Name(): l.Pin.DigestReference()}
	var rolls []string
	for _, d := range list.Items {
		if !runsAny(d, next) {
			continue
		}
		if chosen != nil && !slices.Contains(chosen, d.Name) {
			rep.Note("the release keeps the previous controller, which Deployment " + d.Name + " runs too: only " + strings.Join(chosen, ", ") + " is rolled; a reload of every service upgrades it")
			return nil
		}
		if deploymentPatch(d, next, "") != nil {
			rolls = append(rolls, d.Name)
		}
	}
	rev, err := kubernetes.UpgradeController(ctx, kubernetes.ControllerUpgrade{
		Access: conn.Access, Namespace: ns, Controller: l.Pin.DigestReference(),
		Owner: env.State().State().Owner(), Recorder: env.State(), Timeout: env.StartupTimeout(),
		Log:  func(format string, args ...any) { fmt.Fprintf(env.Log(), "helm: "+format+"\n", args...) },
		Kube: conn.Kube,
	})
	if err != nil {
		return err
	}
	if rev > 0 {
		env.Roll(rolls...)
		rep.Note(fmt.Sprintf("release %s at revision %d", kubernetes.ReleaseName, rev))
	}
	return nil
}

// patchDeployments points every container of the control plane's Deployments that runs a
// rebuilt image's repository at its new in-cluster digest reference, and stamps the
// Installation's digest on those that mount it when the Installation changed. A Deployment that
// already runs them is not touched; one not chosen is left alone.
func (k *reload) patchDeployments(ctx context.Context, env profile.ReloadEnv, rep progress.Reporter) error {
	st, chosen, conn := env.Recorded(), env.Chosen(), env.Conn()
	ns := st.PlatformNamespace
	next := map[string]string{}
	for _, b := range env.Rebuilt() {
		if b.Imported {
			next[b.Image.Pin.Name()] = b.Image.Pin.DigestReference()
		}
	}
	installDigest := ""
	if runtimeChanged(env) && st.InstallationPath != "" {
		sec, err := conn.Kube.CoreV1().Secrets(ns).Get(ctx, kubernetes.InstallationSecret, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read Secret %s/%s: %w", ns, kubernetes.InstallationSecret, err)
		}
		sum := sha256.Sum256(sec.Data[kubernetes.InstallationKey])
		installDigest = hex.EncodeToString(sum[:])
	}
	list, err := conn.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the Deployments of %s: %w", ns, err)
	}
	k.watch = nil
	for _, d := range list.Items {
		if chosen != nil && !slices.Contains(chosen, d.Name) {
			continue
		}
		if runsAny(d, next) {
			// Waited for even when it already runs them: a reload interrupted after the patch
			// left its rollout running.
			k.watch = append(k.watch, d.Name)
		}
		patch := deploymentPatch(d, next, installDigest)
		if patch == nil {
			continue
		}
		if !slices.Contains(k.watch, d.Name) {
			k.watch = append(k.watch, d.Name)
		}
		body, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		if _, err := conn.Kube.AppsV1().Deployments(ns).Patch(ctx, d.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{FieldManager: reloadFieldManager}); err != nil {
			return fmt.Errorf("point Deployment %s/%s at the rebuilt images: %w", ns, d.Name, err)
		}
		env.Roll(d.Name)
	}
	if rolled := env.Rolled(); len(rolled) == 0 {
		rep.Note("every Deployment runs the rebuilt images")
	} else {
		rep.Note("rolling out " + strings.Join(rolled, ", "))
	}
	return nil
}

// deploymentPatch is the strategic merge patch that makes d run the next images (by
// repository) and, when installDigest is set and d mounts the Installation's Secret, carry it;
// nil when d needs none.
func deploymentPatch(d appsv1.Deployment, next map[string]string, installDigest string) map[string]any {
	spec := map[string]any{}
	for key, containers := range map[string][]corev1.Container{"containers": d.Spec.Template.Spec.Containers, "initContainers": d.Spec.Template.Spec.InitContainers} {
		var set []map[string]any
		for _, c := range containers {
			repo, _, _ := strings.Cut(c.Image, "@")
			if ref, ok := next[repo]; ok && c.Image != ref {
				set = append(set, map[string]any{"name": c.Name, "image": ref})
			}
		}
		if set != nil {
			spec[key] = set
		}
	}
	tmpl := map[string]any{}
	if len(spec) > 0 {
		tmpl["spec"] = spec
	}
	if installDigest != "" && mountsSecret(d.Spec.Template.Spec, kubernetes.InstallationSecret) && d.Spec.Template.Annotations[installationDigestAnnotation] != installDigest {
		tmpl["metadata"] = map[string]any{"annotations": map[string]string{installationDigestAnnotation: installDigest}}
	}
	if len(tmpl) == 0 {
		return nil
	}
	return map[string]any{"spec": map[string]any{"template": tmpl}}
}

// runsAny reports whether a container of d runs one of the repositories of next.
func runsAny(d appsv1.Deployment, next map[string]string) bool {
	for _, c := range append(append([]corev1.Container{}, d.Spec.Template.Spec.Containers...), d.Spec.Template.Spec.InitContainers...) {
		repo, _, _ := strings.Cut(c.Image, "@")
		if _, ok := next[repo]; ok {
			return true
		}
	}
	return false
}

func mountsSecret(spec corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil && s.Secret.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// waitForRollouts waits until every Deployment that runs a rebuilt image, or was patched, has
// rolled out: the controller has seen the new template, every replica is updated and available,
// and no old replica remains (the conditions of `kubectl rollout status`). A new Pod that cannot
// come up by itself (the rebuilt image not on the node, a crash loop) ends the wait at once,
// naming the Pod, the reason and the fix (kube.WaitForWorkload).
func (k *reload) waitForRollouts(ctx context.Context, env profile.ReloadEnv, rep progress.Reporter) error {
	ns := env.Recorded().PlatformNamespace
	wctx, cancel := context.WithTimeout(ctx, env.StartupTimeout())
	defer cancel()
	for _, name := range k.watch {
		w := kube.Workload{Kind: "Deployment", Namespace: ns, Name: name}
		err := kube.WaitForWorkload(wctx, env.Conn().Kube, w, kube.WaitOptions{Status: func(s string) { rep.Note(name + ": " + s) }})
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, kube.ErrWaitTimeout) {
				return fmt.Errorf("%s did not roll out within %s: check its Pods' events, or raise --startup-timeout: %w", w, env.StartupTimeout(), err)
			}
			return err
		}
		rep.Note("Deployment " + name + " rolled out")
	}
	return nil
}
