package occdev_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/interrupt"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

// stepNames lists the steps of `up` in the order their AfterStep seam fires: the steps of a
// group's lanes, then the group itself.
func stepNames(t *testing.T, opts occdev.UpOptions) []string {
	t.Helper()
	dr := planUp(t, opts)
	var names []string
	var walk func([]occdev.PlannedStep)
	walk = func(steps []occdev.PlannedStep) {
		for _, s := range steps {
			for _, l := range s.Lanes {
				walk(l.Steps)
			}
			names = append(names, s.Name)
		}
	}
	walk(dr.Steps)
	return names
}

// preflightStep is the first step; it runs before the state directory exists.
const preflightStep = "Check the settings and the cluster"

// A step fails (a crashed Helm install, a wait that times out, a Gateway that never answers):
// for a failure after each step in turn, lane steps and groups included, the rollback removes
// everything recorded so far (by any lane) and the state directory with it. A failure of the
// preflight leaves nothing at all: it runs before the state directory is claimed.
func TestFailureAfterEachStepRollsBackCompletely(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(testbed.Config(t))
	names := stepNames(t, newBed(t).Options())
	if len(names) != 19 {
		t.Fatalf("up has %d steps and groups, want 19: %q", len(names), names)
	}
	for i, step := range names {
		t.Run(fmt.Sprintf("after step %d %s", i+1, step), func(t *testing.T) {
			b := newBed(t)
			var mu sync.Mutex
			var recorded []state.Object
			opts := b.Options()
			opts.NoDiagnose = true // a matrix of rollbacks; the bundle has tests of its own
			opts.Seams().AfterStep = func(name string) error {
				if name != step {
					return nil
				}
				if name != preflightStep {
					st, err := state.Read(b.StateDir)
					if err != nil {
						t.Errorf("read state at the injected failure: %v", err)
					}
					mu.Lock()
					recorded = st.Objects
					mu.Unlock()
				}
				return errors.New("injected failure")
			}
			_, err := occdev.Up(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("up: %v; want the injected failure", err)
			}
			wantRollback := step != preflightStep
			if strings.Contains(err.Error(), "rolled back") != wantRollback || !strings.Contains(err.Error(), step) {
				t.Errorf("error does not name the step and (after the preflight) the rollback: %v", err)
			}
			if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("state directory kept after a complete rollback: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range recorded {
				assertGone(t, dyn, o)
			}
			assertReleaseGone(t, b)
			assertNoLabelledObjects(t, b)
		})
	}
}

// assertNoLabelledObjects lists every kind up creates and checks that nothing carrying occ's
// state label survives (Namespaces only as Terminating).
func assertNoLabelledObjects(t *testing.T, b *bed) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: occdev.LabelDevState}
	nss, err := b.Client.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp == nil {
			t.Errorf("Namespace %s still active", ns.Name)
		}
	}
	count := func(what string, n int, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("list %s: %v", what, err)
		}
		if n != 0 {
			t.Errorf("%d %s with occ's state label remain", n, what)
		}
	}
	rc, err := b.Client.NodeV1().RuntimeClasses().List(ctx, sel)
	count("RuntimeClasses", len(rc.Items), err)
	cr, err := b.Client.RbacV1().ClusterRoles().List(ctx, sel)
	count("ClusterRoles", len(cr.Items), err)
	crb, err := b.Client.RbacV1().ClusterRoleBindings().List(ctx, sel)
	count("ClusterRoleBindings", len(crb.Items), err)
	np, err := b.Client.NetworkingV1().NetworkPolicies("").List(ctx, sel)
	count("NetworkPolicies", len(np.Items), err)
	sec, err := b.Client.CoreV1().Secrets("").List(ctx, sel)
	count("Secrets", len(sec.Items), err)
	dep, err := b.Client.AppsV1().Deployments("").List(ctx, sel)
	count("Deployments", len(dep.Items), err)
	sa, err := b.Client.CoreV1().ServiceAccounts("").List(ctx, sel)
	count("ServiceAccounts", len(sa.Items), err)
}

// Ctrl-C during up cancels the run, but not the rollback: it runs on a fresh context and still
// removes everything.
func TestInterruptedUpStillRollsBack(t *testing.T) {
	b := newBed(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := b.Options()
	opts.Seams().AfterStep = func(name string) error {
		if strings.HasPrefix(name, "Install the OpenShell Gateway chart") {
			cancel() // the user presses Ctrl-C while the Gateway installs
		}
		return nil
	}
	_, err := occdev.Up(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("up after Ctrl-C: %v; want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("rollback not reported: %v", err)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept: %v", err)
	}
	assertReleaseGone(t, b)
	assertNoLabelledObjects(t, b)
}

// A second Ctrl-C stops the rollback too: the state stays, with the command that finishes the
// cleanup, and that `down` then removes everything.
func TestSecondInterruptStopsTheRollback(t *testing.T) {
	b := newBed(t)
	ctx, in := interrupt.New(context.Background())
	opts := b.Options()
	opts.Seams().AfterStep = func(name string) error {
		if strings.HasPrefix(name, "Install the OpenShell Gateway chart") {
			in.Deliver(os.Interrupt) // the user presses Ctrl-C while the Gateway installs,
			in.Deliver(os.Interrupt) // and again before the rollback is through
		}
		return nil
	}
	_, err := occdev.Up(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("up after two Ctrl-Cs: %v; want context.Canceled", err)
	}
	for _, want := range []string{"interrupted", "rollback stopped by a second interrupt", "occ dev down --state-dir " + b.StateDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	st, err := state.Read(b.StateDir)
	if err != nil || len(st.Objects) == 0 {
		t.Fatalf("the stopped rollback kept no record of what is left: %v, %d objects", err, len(st.Objects))
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down after the stopped rollback: %v", err)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept after down: %v", err)
	}
	assertReleaseGone(t, b)
	assertNoLabelledObjects(t, b)
}

// The user made the state directory (mkdir -m 700, or mktemp -d) and up fails: the dry run
// accepts the directory as up does, and the rollback leaves it there, empty, as the user made
// it; only what occ wrote into it goes.
func TestRollbackLeavesAStateDirectoryTheUserMade(t *testing.T) {
	b := newBed(t)
	if err := os.Mkdir(b.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := b.Options()
	dr := planUp(t, opts)
	for _, p := range dr.Problems {
		if strings.Contains(p, b.StateDir) {
			t.Errorf("the dry run refuses the empty private state directory up adopts: %s", p)
		}
	}
	opts.Seams().AfterStep = func(name string) error {
		if name == "Create the platform namespace" {
			return errors.New("injected failure after the namespace")
		}
		return nil
	}
	if _, err := occdev.Up(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), b.StateDir+", which existed before up, was emptied and stays") {
		t.Fatalf("up = %v, want the injected failure, rolled back, the directory emptied and kept", err)
	}
	entries, err := os.ReadDir(b.StateDir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("after the rollback the directory the user made holds %v (%v), want it there and empty", entries, err)
	}
	assertNoLabelledObjects(t, b)

	// The same for down, which says so (on a bed of its own: the API server here has no
	// namespace controller, so the rolled-back Namespace stays terminating).
	b2 := newBed(t)
	if err := os.Mkdir(b2.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := occdev.Up(context.Background(), b2.Options()); err != nil {
		t.Fatal(err)
	}
	res, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: b2.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(b2.StateDir); err != nil || len(entries) != 0 || !res.DirectoryKept {
		t.Fatalf("after down the directory the user made holds %v (%v), kept reported %v; want it there, empty, and said so", entries, err, res.DirectoryKept)
	}
	assertNoLabelledObjects(t, b2)
}

// A delete is refused during the rollback (an admission policy, RBAC, an apiserver hiccup):
// the rollback keeps going, keeps the state directory with exactly what remains, prints the
// retry command, and a later `down` finishes the job once the obstacle is gone.
func TestPartialRollbackKeepsStateAndDownFinishes(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	release := denyRuntimeClassDeletes(t, b)

	opts := b.Options()
	opts.Seams().AfterStep = func(name string) error {
		if name == "Write the Installation" {
			return errors.New("injected failure")
		}
		return nil
	}
	_, err := occdev.Up(ctx, opts)
	if err == nil {
		t.Fatal("up succeeded despite the injected failure")
	}
	msg := err.Error()
	for _, want := range []string{"injected failure", "rollback incomplete; preserving " + b.StateDir, "occ dev down --state-dir " + b.StateDir, "RuntimeClass"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	st, err := state.Read(b.StateDir)
	if err != nil {
		t.Fatalf("state directory not kept: %v", err)
	}
	if len(st.Objects) != 1 || st.Objects[0].Kind != "RuntimeClass" {
		t.Fatalf("state keeps %v; want exactly the RuntimeClass that could not be deleted", st.Objects)
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil || len(status.Objects) != 1 || status.Objects[0].State != state.Present {
		t.Fatalf("status after the partial rollback: %+v, %v", status, err)
	}

	// While the obstacle is there, down fails the same way and keeps the directory.
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err == nil || !strings.Contains(err.Error(), "cleanup incomplete; preserving "+b.StateDir) {
		t.Fatalf("down with the delete still refused: %v", err)
	}

	release()
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down after the obstacle is gone: %v", err)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept after down finished: %v", err)
	}
	if _, err := b.Client.NodeV1().RuntimeClasses().Get(ctx, occdev.RuntimeClassName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass survived down: %v", err)
	}
	assertNoLabelledObjects(t, b)
}

// denyRuntimeClassDeletes installs a ValidatingAdmissionPolicy that refuses to delete
// RuntimeClasses carrying occ's state label, waits until the apiserver enforces it (policies
// take effect asynchronously and report no readiness, so this polls a dry-run delete of a
// probe with a deadline), and returns a
// function that removes it again.
func denyRuntimeClassDeletes(t *testing.T, b *bed) func() {
	t.Helper()
	ctx := context.Background()
	name := "occdev-deny-runtimeclass-delete-" + b.Suffix
	adm := b.Client.AdmissionregistrationV1()
	_, err := adm.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: occdev.LabelDevState, Operator: metav1.LabelSelectorOpExists}}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"node.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"runtimeclasses"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "test: deleting this RuntimeClass is refused"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy: %v", err)
	}
	_, err = adm.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding: %v", err)
	}
	probe := "occdev-probe-" + b.Suffix
	if _, err := b.Client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: probe, Labels: map[string]string{occdev.LabelDevState: "probe"}}, Handler: "runc",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = b.Client.NodeV1().RuntimeClasses().Delete(ctx, probe, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(last) || apierrors.IsForbidden(last), nil
	}); err != nil {
		t.Fatalf("the admission policy was not enforced within 30s (last dry-run delete: %v)", last)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		if err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete binding: %v", err)
		}
		if err := adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete policy: %v", err)
		}
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			last = b.Client.NodeV1().RuntimeClasses().Delete(ctx, probe, metav1.DeleteOptions{})
			return last == nil || apierrors.IsNotFound(last), nil
		}); err != nil {
			t.Fatalf("the admission policy still refuses deletes 30s after its removal: %v", last)
		}
	}
	t.Cleanup(remove)
	return remove
}

// The cluster cannot start the controller's Pods (no nodes, a bad image): the readiness wait
// ends at the startup timeout with a message naming the workload and what to check, and the
// run is rolled back.
func TestReadinessTimeoutNamesTheWorkload(t *testing.T) {
	b := occdevtest.New(t, occdevtest.WithoutKubelet())
	opts := b.Options()
	opts.StartupTimeout = 2 * time.Second
	start := time.Now()
	_, err := occdev.Up(context.Background(), opts)
	if err == nil {
		t.Fatal("up succeeded without any ready workload")
	}
	for _, want := range []string{"Wait for the Agent Sandbox controller and the Gateway", "Deployment " + b.AgentNS + "/agent-sandbox-controller did not become ready within 2s", "raise --startup-timeout", "rolled back"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("up took %s to give up; the wait is bounded by the 2s startup timeout", took)
	}
	assertNoLabelledObjects(t, b)
}

// The developer's kubeconfig context was pointed at another cluster since `up`: down reads the
// recorded cluster identity, notices, and refuses to delete anything there.
func TestDownRefusesAnotherCluster(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, b.Options()); err != nil {
		t.Fatalf("up: %v", err)
	}
	d, err := state.Open(b.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	recordedUID := d.State().Cluster.UID
	if err := d.Update(func(s *state.State) { s.Cluster.UID = "00000000-0000-0000-0000-000000000000" }); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir})
	if err == nil || !strings.Contains(err.Error(), "now reaches a different cluster") || !strings.Contains(err.Error(), "preserving "+b.StateDir) {
		t.Fatalf("down against another cluster: %v", err)
	}
	if _, err := b.Client.CoreV1().Namespaces().Get(ctx, b.Namespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("down touched the cluster anyway: %v", err)
	}

	// Put the identity back and down finishes.
	d, err = state.Open(b.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(s *state.State) { s.Cluster.UID = recordedUID }); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// state.json was edited by hand (or written by a newer occ) and holds a field this occ does not
// know: down refuses to act on it rather than guess, and deletes nothing.
func TestDownRefusesUnknownStateFields(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, b.Options()); err != nil {
		t.Fatalf("up: %v", err)
	}
	path := filepath.Join(b.StateDir, state.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "{", `{"extraObjects": [],`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir})
	if err == nil || !strings.Contains(err.Error(), "invalid development state") || !strings.Contains(err.Error(), "extraObjects") {
		t.Fatalf("down with an unknown state field: %v", err)
	}
	if _, err := b.Client.NodeV1().RuntimeClasses().Get(ctx, occdev.RuntimeClassName, metav1.GetOptions{}); err != nil {
		t.Fatalf("down deleted something from an unreadable state: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// The Gateway chart fails half-way through its install (one of its objects already exists and
// belongs to someone else): the failed Helm release is uninstalled by the rollback, and the
// other party's object is left exactly as it was.
func TestFailedHelmInstallIsRolledBack(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	foreign, err := b.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: occdev.GatewayRelease + "-node-reader-" + b.Namespace},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = occdev.Up(ctx, b.Options())
	if err == nil || !strings.Contains(err.Error(), "Install the OpenShell Gateway chart") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("up over a conflicting chart object: %v", err)
	}
	got, err := b.Client.RbacV1().ClusterRoles().Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil || got.UID != foreign.UID || got.ResourceVersion != foreign.ResourceVersion {
		t.Fatalf("the other party's ClusterRole was changed or removed: %v", err)
	}
	assertReleaseGone(t, b)
	assertNoLabelledObjects(t, b)
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept: %v", err)
	}
}
