// Package kubeprofile is the Kubernetes-only control plane of `occ dev up` (--control-plane
// kubernetes): OCE's PostgreSQL, API and worker installed into the k3d cluster from the
// checkout's production chart, reached only through the development API proxy, whose NodePort
// 30080 k3d publishes on 127.0.0.1. The controller and Agent runtime are built from the checkout
// (or selected by digest), PostgreSQL pulled by its pinned digest, and all three imported into
// the node in one pass and verified there with the OpenShell images. Everything it creates lives
// in the cluster, so `down` deleting the recorded cluster removes it; no Compose is involved.
// It sees the flow only through the profile contract.
package kubeprofile

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Options are the Kubernetes-only control plane's own settings (the checkout, the selected
// images and the key destination are the shared oce.Options).
type Options struct {
	// DevPort is the OCE API's port on 127.0.0.1 (OPENCLAW_DEV_PORT); 0 is 3000.
	DevPort int
	// PostgresImage replaces the pinned PostgreSQL image (OCC_DEVELOPMENT_POSTGRES_IMAGE), by
	// digest.
	PostgresImage string
}

var _ profile.Configurable = Profile{}

// Settings are the profile's own settings, both given only by the environment, bound to a
// fresh Options.
func (Profile) Settings() (any, []option.Setting) {
	o := &Options{}
	return o, []option.Setting{
		{Env: EnvDevPort, Want: "a port between 1 and 65535", Field: &o.DevPort},
		{Env: controlplane.EnvPostgresImage, Field: &o.PostgresImage},
	}
}

// The profile's settings names and files, for messages.
const (
	// EnvDevPort is the OCE API's port on 127.0.0.1.
	EnvDevPort = "OPENCLAW_DEV_PORT"
	// BuildLogFile is the file of the state directory the image builds write their output to.
	BuildLogFile     = oce.BuildLogFile
	defaultDevPort   = 3000
	passwordFileName = kubernetes.PasswordFileName
)

// Plan is what the Kubernetes-only profile adds to the OCE plan: where the API is published and
// which images it pulls by digest, decided before anything happens.
type Plan struct {
	// APIURL is where the OCE API answers: the development proxy's NodePort 30080, published by
	// k3d on 127.0.0.1 at APIPort (OPENCLAW_DEV_PORT).
	APIPort int    `json:"apiPort"`
	APIURL  string `json:"apiURL"`
	// ControllerImage is the controller as built (its tag) or selected (its digest reference).
	ControllerImage string `json:"controllerImage"`
	// PostgresImage is the PostgreSQL image, by digest.
	PostgresImage string `json:"postgresImage"`

	postgres pins.Image
	chart    *chart.Chart
}

// Profile is the Kubernetes-only control plane. It plans from its Input: the shared OCE options
// (Input.OCE), its own settings (Input.Settings, an Options or *Options), occ's pins (the
// PostgreSQL image, the controller's Node base), the cluster's API port (which the OCE API's
// port must differ from) and the test seams (Input.Deps).
type Profile struct{}

// Platform is how the platform serves the control plane: inside the cluster, the Gateway a
// ClusterIP Service, in oce-system unless another namespace is given.
var Platform = profile.Platform{Gateway: platform.ControlPlaneKubernetes, Namespace: "oce-system"}

// Platform is the profile's Platform.
func (Profile) Platform() profile.Platform { return Platform }

// Plan is New as the profile contract asks for it.
func (x Profile) Plan(in profile.Input) (profile.Planned, error) { return profile.Decided(x.New(in)) }

// Planned is the profile decided for one `up`. It is a value: its plan is fixed when it is
// decided, and what its steps produce while the run goes on is kept in a run of its own, never
// in the plan.
type Planned struct {
	profile.Base
	in   profile.Input
	deps profile.Deps
	// OCE and Kube are the plan (nil when the control plane is pending), as the dry run shows it.
	OCE     *oce.Plan
	Kube    *Plan
	pending string
	run     *run
}

// run is what the Kubernetes-only profile's steps share during one `up`: the images of its
// image steps, the control plane, and what its last steps produced.
type run struct {
	controller, runtime, postgres images.Local
	bases                         []controlplane.ResolvedBase
	cp                            *kubernetes.ControlPlane
	// key is what the bootstrap key copy read besides the key (the administrator's e-mail and
	// password file).
	key     kubernetes.KeyResult
	session oce.Session
}

// New decides the profile for one `up`. The checkout, the image selection and the key
// destination are decided as for every OCE profile (package oce); a chart that refuses the
// values the install will pass stops `up` and the dry run before anything exists.
func (x Profile) New(in profile.Input) (Planned, error) {
	if len(in.OCE.ComposeArgs) > 0 {
		return Planned{}, &option.Error{Option: "Compose options after --", Value: strings.Join(in.OCE.ComposeArgs, " "),
			Rule: "are refused: the Kubernetes-only profile runs no Compose project, so it takes no Compose options", Fix: "drop them, or use --control-plane compose"}
	}
	k := Planned{in: in, deps: in.Deps, run: &run{}}
	kp, err := x.resolve(in)
	if err != nil {
		return Planned{}, err
	}
	co, pending, err := oce.FindOnK3d(in, in.OCE, "the Kubernetes-only control plane runs images occ imports into the node of the k3d cluster it creates")
	if err != nil {
		return Planned{}, err
	}
	if pending != "" {
		k.pending = pending
		return k, nil
	}
	op, err := oce.NewPlan(in, in.OCE, co)
	if err != nil {
		return Planned{}, err
	}
	if kp.chart, err = kubernetes.LoadChart(co.Root); err != nil {
		return Planned{}, err
	}
	if sel := op.SelectedImages; sel != nil {
		kp.ControllerImage = sel.Controller
	} else {
		kp.ControllerImage = controlplane.DefaultControllerTag
		nodeBase, err := controlplane.NodeBaseImage("", in.Pins.OCE.NodeBaseImage)
		if err != nil {
			return Planned{}, err
		}
		if err := op.PlanBuilds(in.OCE, []controlplane.BuildPlanRequest{
			{Role: oce.RoleController, ContextDir: co.Root, Dockerfile: controlplane.ControllerDockerfile, Target: controlplane.ControllerTarget,
				Args: map[string]controlplane.BuildArg{controlplane.NodeBaseImageArg: {Value: nodeBase, Source: "occ's pin oce.nodeBaseImage (" + in.Pins.Source + ")"}}},
			{Role: oce.RoleRuntime, ContextDir: co.Root, Dockerfile: controlplane.RuntimeDockerfile},
		}); err != nil {
			return Planned{}, err
		}
	}
	values, err := kubernetes.PlaceholderValuesInput(in.Namespace, kp.ControllerImage, kp.APIPort)
	if err != nil {
		return Planned{}, err
	}
	vals, err := kubernetes.BuildValues(values)
	if err != nil {
		return Planned{}, err
	}
	if err := kubernetes.CheckChart(kp.chart, in.Namespace, vals); err != nil {
		return Planned{}, err
	}
	k.OCE, k.Kube = op, kp
	return k, nil
}

// resolve checks the profile's own settings: the API's host port (chosen free for an
// environment other than the default one) and the images pulled by digest.
func (Profile) resolve(in profile.Input) (*Plan, error) {
	ko, err := profile.SettingsOf[Options](in)
	if err != nil {
		return nil, err
	}
	kp := &Plan{}
	if kp.postgres, err = oce.DigestImage(controlplane.EnvPostgresImage, ko.PostgresImage, in.Pins.OCE.PostgresImage, controlplane.PostgresImage); err != nil {
		return nil, err
	}
	kp.PostgresImage = kp.postgres.DigestReference()
	kp.APIPort = ko.DevPort
	if kp.APIPort == 0 {
		if kp.APIPort, err = profile.HostPort(in, defaultDevPort, in.ClusterAPIPort); err != nil {
			return nil, err
		}
	}
	if kp.APIPort < 1 || kp.APIPort > 65535 {
		return nil, &option.Error{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort), Rule: "must be between 1 and 65535", Fix: "choose a free port on 127.0.0.1 (default 3000)"}
	}
	if kp.APIPort == in.ClusterAPIPort {
		return nil, &option.Error{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort), Rule: "is also the Kubernetes API port: development API and Kubernetes API ports must differ",
			Fix: "choose another " + EnvDevPort + " or --api-port"}
	}
	kp.APIURL = "http://127.0.0.1:" + strconv.Itoa(kp.APIPort)
	return kp, nil
}

// Pending says what of the control plane occ does not start.
func (k Planned) Pending() string { return k.pending }

// Needs publishes the API proxy's NodePort on 127.0.0.1.
func (k Planned) Needs() cluster.Needs {
	return cluster.Needs{Publish: []cluster.Port{{HostPort: k.Kube.APIPort, NodePort: kubernetes.ProxyNodePort}}}
}

// BeforeCluster records the control plane, then builds (or takes the selected) controller and
// Agent runtime and pulls PostgreSQL, all before the cluster exists.
func (k Planned) BeforeCluster() []profile.Step {
	steps := []profile.Step{{Name: "Record the OCE control plane", Describe: k.describeRecord, Run: k.record}}
	if k.OCE.SelectedImages == nil {
		steps = append(steps,
			profile.Step{Name: "Pull the base images of the control-plane builds", Describe: func(profile.View) step.Description { return oce.DescribeBasePulls(k.OCE) }, Run: k.pullBases},
			profile.Step{Name: "Build the controller and Agent runtime images from the checkout", Describe: k.describeBuild, Run: k.build},
		)
	} else {
		steps = append(steps, profile.Step{Name: "Use the selected controller and Agent runtime images", Describe: k.describeSelectedImages, Run: k.useSelectedImages})
	}
	return append(steps, profile.Step{Name: "Pull the PostgreSQL image", Describe: k.describePostgres, Run: k.pullPostgres})
}

// ControlPlane installs the chart and waits for the API through the development proxy, then
// copies the key out and waits for the bootstrap Namespace.
func (k Planned) ControlPlane() []profile.Step {
	steps := step.Adapt(kubernetes.Steps(), func(v profile.View) kubernetes.Config {
		return kubernetes.Config{Namespace: v.Namespace, StartupTimeout: v.StartupTimeout, HostAPIPort: k.Kube.APIPort, Routing: v.Routing}
	}, k.controlPlane)
	session := func(profile.Env) *oce.Session { return &k.run.session }
	return append(steps,
		profile.Step{Name: "Wait for the OCE API through the development proxy", Describe: k.describeAPIWait, Run: k.waitForAPI},
		oce.CopyKeyStep(k.describeKey, session, k.copyKey),
		oce.NamespaceWaitStep[profile.View](k.in.StartupTimeout, session, oce.API[profile.Env]{URL: k.Kube.APIURL, Client: func(profile.Env) *http.Client { return k.deps.APIClient }}),
	)
}

// Preflight refuses, before the state is claimed, an API port something already listens on,
// and selected images that are not in the engine or whose revision label is not the checkout's
// commit (the check every OCE profile makes).
func (k Planned) Preflight(ctx context.Context, env profile.Env, _ progress.Reporter) error {
	op, kp := k.OCE, k.Kube
	if err := oce.CheckBuilder(op, env.Engine()); err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(kp.APIPort)))
	if err != nil {
		return &option.Error{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort),
			Rule: "is already in use on 127.0.0.1 (" + err.Error() + "); the OCE API is published there", Fix: "choose a free port"}
	}
	_ = l.Close()
	sel := op.SelectedImages
	if sel == nil {
		return nil
	}
	imgs, err := controlplane.VerifySelectedImages(ctx, env.Engine().Verbs(), *sel, op.Commit)
	if err != nil {
		return err
	}
	if k.run.controller, err = oce.SelectedLocal(ctx, env.Engine(), imgs.Controller); err != nil {
		return err
	}
	k.run.runtime, err = oce.SelectedLocal(ctx, env.Engine(), imgs.Runtime)
	return err
}

func (k Planned) describeRecord(profile.View) step.Description {
	op := k.OCE
	return step.Creates("record of the OCE control plane: checkout " + op.Checkout + " at " + op.Commit + ", API " + k.Kube.APIURL + " (no Compose project: everything it creates is in the cluster)")
}

// record records the control plane before any of it exists, so `status` and `down` know it;
// the cluster's record holds everything it will create.
func (k Planned) record(_ context.Context, env profile.Env, _ progress.Reporter) error {
	cp := &state.ControlPlane{Checkout: k.OCE.Checkout, Commit: k.OCE.Commit, APIURL: k.Kube.APIURL, HostPorts: map[string]int{EnvDevPort: k.Kube.APIPort}}
	if err := env.State().Update(func(s *state.State) { s.ControlPlane = cp }); err != nil {
		return fmt.Errorf("record the control plane: %w", err)
	}
	return nil
}

func (k Planned) pullBases(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	var err error
	k.run.bases, err = oce.PullBases(ctx, env, rep, k.OCE)
	return err
}

func (k Planned) describeSelectedImages(profile.View) step.Description {
	sel := k.OCE.SelectedImages
	return step.Note("nothing built; imports the selected " + sel.Controller + " and " + sel.Runtime + " with the OpenShell images (checked in the preflight: present in the engine, revision label " + k.OCE.Commit + ")")
}

// useSelectedImages records the selected images the preflight found; nothing is pulled.
func (k Planned) useSelectedImages(_ context.Context, env profile.Env, _ progress.Reporter) error {
	sel := k.OCE.SelectedImages
	return oce.RecordImages(env.State(),
		state.ControlPlaneImage{Role: "controller", Reference: sel.Controller, ID: k.run.controller.ID, Selected: true},
		state.ControlPlaneImage{Role: "runtime", Reference: sel.Runtime, ID: k.run.runtime.ID, Selected: true})
}

// builtByID is how the dry run says a built image reaches the node.
const builtByID = "built, by its image ID"

// buildLogMode is the permission bits of BuildLogFile.
const buildLogMode = 0o600

func (k Planned) describeBuild(v profile.View) step.Description {
	op := k.OCE
	return step.Describe(
		step.FileAt(filepath.Join(v.StateDir, BuildLogFile), buildLogMode, "the build output"),
		step.Image{Reference: controlplane.DefaultControllerTag, Where: step.InEngine,
			Note: "built through the engine's BuildKit from " + op.Checkout + "/" + controlplane.ControllerDockerfile + " (target " + controlplane.ControllerTarget + ", " + oce.BuildArgs(op.PlannedBuild(oce.RoleController)) + "), imported into the node by its image ID, " + images.HeldNote},
		step.Image{Reference: controlplane.DefaultRuntimeTag, Where: step.InEngine,
			Note: "built from " + op.Checkout + "/" + controlplane.RuntimeDockerfile + " (" + oce.BuildArgs(op.PlannedBuild(oce.RoleRuntime)) + "), imported into the node by its image ID, " + images.HeldNote},
	)
}

// build builds the controller and the Agent runtime from the checkout; the build output goes
// to image-build.log in the state directory, a failure carries the failing step's last lines,
// and the images travel on by the IDs their builds reported.
func (k Planned) build(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	op := k.OCE
	logPath := env.State().File(BuildLogFile)
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, buildLogMode)
	if err != nil {
		return fmt.Errorf("open the build log: %w", err)
	}
	defer out.Close()
	rep.Note("build output in " + logPath)
	opts := controlplane.ImageOptions{
		Checkout: op.Checkout, Commit: op.Commit, NetworkMode: k.deps.BuildNetwork,
		ControllerArgs: op.PlannedBuild(oce.RoleController).WithResolved(k.run.bases),
		RuntimeArgs:    op.PlannedBuild(oce.RoleRuntime).WithResolved(k.run.bases),
	}
	if err := opts.CheckBuilds(); err != nil {
		return err
	}
	creq, rreq := controlplane.BuildRequests(opts)
	built, err := oce.BuildImages(ctx, env, []oce.RecordedBuild{oce.RecordBuild(oce.RoleController, creq), oce.RecordBuild(oce.RoleRuntime, rreq)},
		func(line string) { fmt.Fprintln(out, line) })
	if err != nil {
		return err
	}
	k.run.controller, k.run.runtime = built[oce.RoleController], built[oce.RoleRuntime]
	rep.Note(fmt.Sprintf("controller %s, Agent runtime %s", k.run.controller.ID, k.run.runtime.ID))
	return nil
}

func (k Planned) describePostgres(v profile.View) step.Description {
	img := images.PresentItem(k.Kube.postgres, "the "+v.EngineName+" engine", false)
	img.Note += "; imported into the node with the control plane's other images"
	return step.Describe(img)
}

func (k Planned) pullPostgres(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	kp := k.Kube
	engine := env.Engine()
	l, err := images.Present(ctx, images.PresentOptions{Engine: engine.Verbs(), EngineName: engine.Name(), Image: kp.postgres, Recorder: env.State(), Progress: oce.PullProgress(rep)})
	if err != nil {
		return err
	}
	k.run.postgres = l
	return oce.RecordImages(env.State(), state.ControlPlaneImage{Role: "postgres", Reference: kp.PostgresImage, ID: l.ID})
}

// ImportImages are the control plane's images as the import names them: a built image by its
// image ID, known only once built.
func (k Planned) ImportImages() []step.Image {
	postgres := step.Image{Reference: k.Kube.PostgresImage, Note: "PostgreSQL"}
	if sel := k.OCE.SelectedImages; sel != nil {
		return []step.Image{{Reference: sel.Controller, Note: "the selected controller"}, {Reference: sel.Runtime, Note: "the selected Agent runtime"}, postgres}
	}
	return []step.Image{{Reference: controlplane.DefaultControllerTag, Note: builtByID}, {Reference: controlplane.DefaultRuntimeTag, Note: builtByID}, postgres}
}

// Imports are the controller, the Agent runtime and PostgreSQL, imported in one pass.
func (k Planned) Imports(profile.Env) []images.Local {
	return []images.Local{k.run.controller, k.run.runtime, k.run.postgres}
}

// Installation adds Kubernetes Compute's in-cluster part to the Installation: the Agent runtime
// by its in-cluster digest (every image required to be digest-pinned), and the node and Gateway
// Service as the cluster reports them (the Gateway's ClusterIP Service checked to serve its
// port, and to be the one the platform names).
func (k Planned) Installation(ctx context.Context, env profile.Env, in *platform.InstallationInput) error {
	refs := map[string]string{}
	for role, l := range map[string]images.Local{"controller": k.run.controller, "runtime": k.run.runtime, "postgres": k.run.postgres} {
		ref, err := env.InCluster(l)
		if err != nil {
			return err
		}
		refs[role] = ref
	}
	got, err := kubernetes.BuildInstallationInput(ctx, env.Conn().Kube, kubernetes.InstallationRequest{
		Namespace: k.in.Namespace, GatewayService: platform.GatewayServiceName, GatewayPort: platform.GatewayPort, RuntimeImage: refs["runtime"],
	})
	if err != nil {
		return err
	}
	if got.GatewayEndpoint != in.GatewayEndpoint || got.GatewayClusterIP != in.GatewayClusterIP {
		return fmt.Errorf("the Gateway Service answers as %s (ClusterIP %s), but the platform names %s (ClusterIP %s): refusing to write an Installation that points elsewhere",
			got.GatewayEndpoint, got.GatewayClusterIP, in.GatewayEndpoint, in.GatewayClusterIP)
	}
	in.Compute = got.Compute
	return env.State().Update(func(s *state.State) {
		for i := range s.ControlPlane.Images {
			s.ControlPlane.Images[i].InCluster = refs[s.ControlPlane.Images[i].Role]
		}
	})
}

// controlPlane builds the in-cluster control plane on first use, from the verified images, the
// written Installation, the checkout's chart and the cluster's network.
func (k Planned) controlPlane(ctx context.Context, env profile.Env) (*kubernetes.ControlPlane, error) {
	if k.run.cp != nil {
		return k.run.cp, nil
	}
	controller, err := env.InCluster(k.run.controller)
	if err != nil {
		return nil, err
	}
	postgres, err := env.InCluster(k.run.postgres)
	if err != nil {
		return nil, err
	}
	conn := env.Conn()
	net, err := env.Engine().Verbs().Inspect(ctx, engine.Networks, conn.Access.Network)
	if err != nil {
		return nil, fmt.Errorf("inspect the cluster's network %s: %w", conn.Access.Network, err)
	}
	kp := k.Kube
	log := env.Log()
	cp, err := kubernetes.New(conn, kubernetes.Config{
		Namespace: k.in.Namespace, ControllerImage: controller, PostgresImage: postgres, HostAPIPort: kp.APIPort,
		InstallationFile: env.State().File(platform.InstallationFileName), Chart: kp.chart, NodeNetwork: conn.Access.Network, NodeSubnets: net.Subnets,
		StartupTimeout: k.in.StartupTimeout, Random: k.deps.Random, Routing: k.in.Routing,
		HelmLog: func(format string, args ...any) { fmt.Fprintf(log, "helm: "+format+"\n", args...) },
	})
	if err != nil {
		return nil, err
	}
	k.run.cp = cp
	return cp, nil
}

func (k Planned) describeAPIWait(v profile.View) step.Description {
	session := controlplane.SessionWait(k.Kube.APIURL)
	session.Note = "through the development proxy"
	return step.Note(fmt.Sprintf("nothing created; polls GET %s%s through the development proxy until it answers 2xx, up to %s", k.Kube.APIURL, controlplane.SessionPath, v.StartupTimeout)).Waiting(session)
}

// waitForAPI polls the API's anonymous session endpoint through the development proxy (the
// NodePort k3d publishes on loopback), before the key is read.
func (k Planned) waitForAPI(ctx context.Context, _ profile.Env, _ progress.Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, k.in.StartupTimeout)
	defer cancel()
	return controlplane.WaitReady(ctx, controlplane.ReadinessOptions{APIURL: k.Kube.APIURL, Client: k.deps.APIClient})
}

func (k Planned) describeKey(v profile.View) step.Description {
	reader := kubeobj.Describe([]runtime.Object{kubernetes.ReaderPodObject(v.Namespace, kubernetes.Ownership{}, "")},
		map[string]string{"Pod " + kubernetes.ReaderPod: "temporary: mounts the bootstrap volume read-only, its files read through the API's exec; removed again even on failure"})
	return step.Describe(reader[0],
		step.FileAt(filepath.Join(v.StateDir, passwordFileName), kubernetes.PasswordFileMode, "the administrator password"),
		step.FileAt(k.OCE.KeyDest.Path, controlplane.KeyFileMode, "O_EXCL; written only after GET /installation with the key in x-api-key through the proxy answered its Installation"),
	)
}

// copyKey reads the bootstrap output through the reader Pod, verifies the service key against
// the live Installation through the proxy, and writes the key and the password.
func (k Planned) copyKey(ctx context.Context, env profile.Env) (controlplane.InstalledKey, error) {
	op := k.OCE
	controller, err := env.InCluster(k.run.controller)
	if err != nil {
		return controlplane.InstalledKey{}, err
	}
	conn := env.Conn()
	exec := k.deps.Exec
	if exec == nil {
		exec = kubernetes.APIExec{Config: conn.Config, Client: conn.Kube}
	}
	d := env.State()
	res, err := kubernetes.CopyBootstrapKey(ctx, conn, exec,
		controlplane.KeyInstaller{StateDir: d.Path(), Destination: op.KeyDest, APIURL: k.Kube.APIURL, Client: k.deps.APIClient},
		kubernetes.KeyCopy{Namespace: k.in.Namespace, ControllerImage: controller, PasswordFile: d.File(passwordFileName), Timeout: k.in.StartupTimeout})
	if err != nil {
		return controlplane.InstalledKey{}, err
	}
	k.run.key = res
	return controlplane.InstalledKey{Path: op.KeyDest.Path, Owned: op.KeyDest.Owned, InstallationID: res.InstallationID}, nil
}

// Rollback removes a key this failed run wrote at --key-output.
func (k Planned) Rollback(profile.Env) error { return k.run.session.RemoveWrittenKey() }

// Summary is the control plane's part of the summary: the API URL, the verified key and its
// Installation, the bootstrap Namespace, the Agent runtime and the base images.
func (k Planned) Summary(env profile.Env) *profile.Summary {
	op := k.OCE
	runtime, _ := env.InCluster(k.run.runtime)
	return &profile.Summary{
		ControlPlane:   "Kubernetes (namespace " + k.in.Namespace + ", chart from " + op.Checkout + " at " + oce.ShortCommit(op.Commit) + ")",
		Drivers:        "compute kubernetes, sandbox openshell",
		APIURL:         k.Kube.APIURL,
		InstallationID: k.run.key.InstallationID,
		KeyFile:        op.KeyFile,
		Namespace:      k.run.session.Namespace.ID,
		RuntimeImage:   runtime,
		AdminEmail:     k.run.key.AdminEmail,
		PasswordFile:   k.run.key.PasswordFile,
		BaseImages:     oce.BaseSummary(k.run.bases),
	}
}
