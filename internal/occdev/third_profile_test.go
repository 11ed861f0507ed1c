package occdev_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// noteProfile is a control plane occ has never heard of, written the way a profile package is:
// it sees the flow only through the profile contract. It runs inside the cluster (a ClusterIP
// Gateway in its own default namespace), writes one ConfigMap after the platform is installed,
// and says so in the summary; `occ dev status` reports its ConfigMap as the cluster holds it.
// It has no reload (it is no profile.Reloader), so `occ dev reload` refuses its environment.
type noteProfile struct{}

const (
	noteProfileName      = "note"
	noteProfileNamespace = "note-system"
	noteConfigMap        = "note-profile"
)

func (noteProfile) Platform() profile.Platform {
	return profile.Platform{Gateway: platform.ControlPlaneKubernetes, Namespace: noteProfileNamespace}
}

func (noteProfile) Plan(in profile.Input) (profile.Planned, error) {
	if in.Name != noteProfileName {
		return nil, errors.New("planned under the name " + in.Name)
	}
	if err := refuseComposeArgs(in); err != nil {
		return nil, err
	}
	return &notePlan{namespace: in.Namespace}, nil
}

// notePlan is the note profile decided for one `up`.
type notePlan struct {
	profile.Base
	namespace string
	// uid is the ConfigMap's, once created.
	uid string
}

func (n *notePlan) ControlPlane() []profile.Step {
	return []profile.Step{{
		Name: "Write the note ConfigMap",
		Describe: func(v profile.View) step.Description {
			return step.Objects(step.Object{Kind: "ConfigMap", Namespace: v.Namespace, Name: noteConfigMap, Note: "the note profile's"})
		},
		Run: func(ctx context.Context, env profile.Env, rep progress.Reporter) error {
			u, err := env.Conn().Ensure(ctx, &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: noteConfigMap, Namespace: n.namespace},
				Data:       map[string]string{"state": env.State().Path()},
			}, kubeobj.Converge)
			if err != nil {
				return err
			}
			n.uid = string(u.GetUID())
			rep.Note("ConfigMap " + n.namespace + "/" + noteConfigMap)
			return nil
		},
	}}
}

// Status is the note profile's part of `occ dev status`: its recorded ConfigMap, read from the
// recorded cluster.
func (noteProfile) Status(ctx context.Context, rec profile.Recorded) *profile.Status {
	out := &profile.Status{Images: []state.ControlPlaneImage{}, BaseImages: []state.BaseImage{}, Services: []profile.ServiceStatus{}}
	i := slices.IndexFunc(rec.State().Objects, func(o state.Object) bool { return o.Kind == "ConfigMap" && o.Name == noteConfigMap })
	if i < 0 {
		out.Runs = "note: no ConfigMap recorded"
		return out
	}
	o := rec.State().Objects[i]
	out.Runs = "note: ConfigMap " + o.Namespace + "/" + o.Name
	conn, err := rec.Conn(ctx)
	if err != nil {
		out.ServicesProblem = err.Error()
		return out
	}
	cm, err := conn.Kube.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		out.ServicesProblem = err.Error()
		return out
	}
	out.Services = append(out.Services, profile.ServiceStatus{Service: noteConfigMap, State: "present (uid " + string(cm.UID) + ")"})
	return out
}

func (n *notePlan) Summary(profile.Env) *profile.Summary {
	return &profile.Summary{ControlPlane: "note (ConfigMap " + n.namespace + "/" + noteConfigMap + " " + n.uid + ")", Drivers: "none"}
}

// withNoteProfile registers the note profile for one `up`, as a profile package's one registry
// line would.
func withNoteProfile(o occdev.UpOptions) occdev.UpOptions {
	o.Seams().Profiles = map[string]profile.Profile{noteProfileName: noteProfile{}}
	o.ControlPlane = noteProfileName
	return o
}

// Someone adds a third control plane: the dry run lists its step by the object it creates, in
// the namespace its Platform names, after every step of the platform; the Gateway is served the
// way its Platform asks (a ClusterIP Service); the flow never needed its name.
func TestAThirdProfileIsOnePackageAndOneRegistryLine(t *testing.T) {
	dir := t.TempDir()
	dr, err := occdev.PlanUp(context.Background(), withNoteProfile(occdev.UpOptions{
		StateDir: filepath.Join(dir, "state"), CacheDir: filepath.Join(dir, "cache"),
		Docker: locate.Env{Getenv: func(k string) string {
			if k == "DOCKER_HOST" {
				return "unix:///nonexistent/docker.sock"
			}
			return ""
		}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if dr.Plan.ControlPlane != noteProfileName || dr.Plan.Namespace != noteProfileNamespace || dr.Plan.ServiceType != corev1.ServiceTypeClusterIP || dr.Plan.NodePort != 0 || dr.ControlPlane != "" {
		t.Fatalf("plan: control plane %q, namespace %q, Gateway %s %d, pending %q", dr.Plan.ControlPlane, dr.Plan.Namespace, dr.Plan.ServiceType, dr.Plan.NodePort, dr.ControlPlane)
	}
	last := dr.Steps[len(dr.Steps)-1]
	if last.Name != "Write the note ConfigMap" || len(last.Objects) != 1 || last.Creates[0] != "ConfigMap "+noteProfileNamespace+"/"+noteConfigMap+" (the note profile's)" {
		t.Fatalf("last step %+v; want the note profile's ConfigMap", last)
	}
	if i := slices.IndexFunc(dr.Steps, func(s occdev.PlannedStep) bool { return s.Name == "Write the Installation" }); i != len(dr.Steps)-2 {
		t.Errorf("the Installation is step %d of %d; want the note profile's step right after it", i, len(dr.Steps))
	}

	// A name nobody registered is refused naming the registered ones.
	var oe *occdev.OptionError
	_, err = occdev.PlanUp(context.Background(), occdev.UpOptions{StateDir: filepath.Join(dir, "state"), ControlPlane: noteProfileName})
	if !errors.As(err, &oe) || !strings.Contains(oe.Fix, "compose or kubernetes") {
		t.Fatalf("an unregistered profile: %v", err)
	}
}

// testThirdProfile runs `up`, `status`, `reload` and `down` of the note profile on the k3d bed
// through the real flow: its ConfigMap is created in the cluster and recorded in the state, the
// summary carries its line, status reports the ConfigMap as the cluster holds it, reload is
// refused without a change, and `down` leaves nothing behind.
func testThirdProfile(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	opts := withNoteProfile(b.options(t))
	downAtEnd(t, opts.StateDir)
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, opts.Log)
	}
	name, dir := opts.K3d().ClusterName, opts.StateDir
	vols := b.volumesOf(t, name)
	if sum.OCE == nil || !strings.HasPrefix(sum.OCE.ControlPlane, "note (ConfigMap "+noteProfileNamespace+"/"+noteConfigMap+" ") || sum.Namespace != noteProfileNamespace || sum.ControlPlane != "" {
		t.Fatalf("summary: %+v (control plane %+v)", sum, sum.OCE)
	}
	st, err := state.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Profile != noteProfileName || !slices.ContainsFunc(st.Objects, func(o state.Object) bool {
		return o.Type == kubeobj.TypeObject && o.Kind == "ConfigMap" && o.Namespace == noteProfileNamespace && o.Name == noteConfigMap
	}) {
		t.Errorf("state: profile %q, objects %+v; want the note ConfigMap recorded", st.Profile, st.Objects)
	}
	cm, err := kubeClient(t, st.Cluster).CoreV1().ConfigMaps(noteProfileNamespace).Get(ctx, noteConfigMap, metav1.GetOptions{})
	if err != nil || cm.Data["state"] != dir || !strings.HasSuffix(sum.OCE.ControlPlane, " "+string(cm.UID)+")") {
		t.Fatalf("ConfigMap in the cluster: %+v (%v)", cm, err)
	}

	// `status` reports the profile's own part, read from the cluster; `reload` refuses the
	// environment and leaves the record as it was.
	sopts := occdev.StatusOptions{StateDir: dir}
	sopts.Seams().Profiles = opts.Seams().Profiles
	status, err := occdev.GetStatus(ctx, sopts)
	if err != nil {
		t.Fatal(err)
	}
	if cp := status.ControlPlane; !status.Reachable || cp == nil || cp.Runs != "note: ConfigMap "+noteProfileNamespace+"/"+noteConfigMap || cp.ServicesProblem != "" ||
		len(cp.Services) != 1 || cp.Services[0].State != "present (uid "+string(cm.UID)+")" {
		t.Errorf("status: reachable %v, control plane %+v", status.Reachable, status.ControlPlane)
	}
	before, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	ropts := occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}
	ropts.Seams().Profiles = opts.Seams().Profiles
	if _, err := occdev.Reload(ctx, ropts); err == nil || !strings.Contains(err.Error(), `its control plane "note" has no reload`) {
		t.Errorf("reload: %v", err)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "state.json")); err != nil || string(after) != string(before) {
		t.Errorf("a refused reload changed the record (%v)", err)
	}

	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := b.leftovers(t, name, vols); len(left) > 0 {
		t.Errorf("after down: %v", left)
	}
	if !stateGone(dir) {
		t.Errorf("state directory %s left after down", dir)
	}
}

// recordedNoteEnvironment writes the record the note profile's `up` leaves (its ConfigMap, a
// cluster occ created with k3d) with a kubeconfig that names no server, and returns the state
// directory.
func recordedNoteEnvironment(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(privateDir(t), "state")
	d, err := state.Create(dir, state.State{
		Profile: noteProfileName, PlatformNamespace: noteProfileNamespace,
		Cluster: state.Cluster{Provider: "k3d", Name: "occ-dev-note", Kubeconfig: filepath.Join(dir, "kubeconfig"), Context: "k3d-occ-dev-note"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Record(state.Object{Type: kubeobj.TypeObject, APIVersion: "v1", Kind: "ConfigMap", Namespace: noteProfileNamespace, Name: noteConfigMap, UID: "u1"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A developer runs `occ dev reload` on the environment of a control plane whose profile has no
// reload: it is refused before anything is checked or built, naming the control plane, the
// rule and the control planes reload can roll, with down and up as the fix; the record is left
// as it was. Without the profile registered the name is refused as unknown.
func TestReloadRefusesAThirdProfileWithoutReload(t *testing.T) {
	ctx := context.Background()
	dir := recordedNoteEnvironment(t)
	before, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "cannot reload the environment recorded in " + dir + `: its control plane "note" has no reload: occ dev reload rolls only a control plane whose profile gives reload steps (compose, kubernetes)`

	opts := occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}
	opts.Seams().Profiles = map[string]profile.Profile{noteProfileName: noteProfile{}}
	_, err = occdev.Reload(ctx, opts)
	if err == nil || !strings.HasPrefix(err.Error(), want+"\n") || !strings.Contains(err.Error(), "occ dev down --state-dir "+dir) || !strings.Contains(err.Error(), "occ dev up") {
		t.Fatalf("reload: %v", err)
	}
	if _, err := occdev.PlanReload(opts); err == nil || !strings.HasPrefix(err.Error(), want+"\n") {
		t.Fatalf("reload --dry-run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "image-build.log")); err == nil {
		t.Error("a refused reload built something")
	}
	if after, err := os.ReadFile(filepath.Join(dir, "state.json")); err != nil || string(after) != string(before) {
		t.Errorf("a refused reload changed the record (%v):\n%s", err, after)
	}

	_, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err == nil || !strings.Contains(err.Error(), `its control plane "note" is not one this occ knows (compose, kubernetes)`) {
		t.Fatalf("reload of an unregistered profile: %v", err)
	}
}

// `occ dev status` of the note profile's environment while its cluster does not answer: the
// profile's own part names its recorded ConfigMap and says why its state is unknown, and
// nothing of an OCE control plane is claimed. Without the profile registered, status reports
// no control plane at all.
func TestStatusShowsAThirdProfilesPart(t *testing.T) {
	ctx := context.Background()
	dir := recordedNoteEnvironment(t)
	opts := occdev.StatusOptions{StateDir: dir}
	opts.Seams().Profiles = map[string]profile.Profile{noteProfileName: noteProfile{}}
	st, err := occdev.GetStatus(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cp := st.ControlPlane
	if cp == nil || cp.Runs != "note: ConfigMap "+noteProfileNamespace+"/"+noteConfigMap || cp.ServicesProblem == "" || len(cp.Services) != 0 || cp.Checkout != "" || cp.API != "" {
		t.Fatalf("status: control plane %+v", cp)
	}
	doc, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), `"checkout"`) || !strings.Contains(string(doc), `"runs":"note: ConfigMap note-system/note-profile"`) {
		t.Errorf("status JSON of the control plane: %s", doc)
	}

	st, err = occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
	if err != nil || st.ControlPlane != nil {
		t.Fatalf("status of an unregistered profile: %+v, %v", st.ControlPlane, err)
	}
}

// refuseComposeArgs refuses Compose options after -- for the note profile, which runs no Compose
// project: a profile refuses them itself, as the Kubernetes-only profile does.
func refuseComposeArgs(in profile.Input) error {
	if len(in.OCE.ComposeArgs) == 0 {
		return nil
	}
	return &option.Error{Option: "Compose options after --", Value: strings.Join(in.OCE.ComposeArgs, " "),
		Rule: "the " + in.Name + " profile does not accept Compose options", Fix: "drop them, or use --control-plane compose"}
}
