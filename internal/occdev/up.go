package occdev

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/openclaw/occ/internal/interrupt"
	"github.com/openclaw/occ/internal/occdev/diagnose"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/step"
)

// upSteps is the whole `occ dev up` flow, in order. The cheap checks come first, then the
// state is claimed (recording the engine before anything exists); the artifacts are
// fetched and the Gateway chart checked (rendered with the API versions the Agent Sandbox
// manifest adds) while the cluster is made available. For k3d that is one group: the pinned
// images are pulled and the cluster created, each OpenShell image imported and verified in the
// node by its own lane, the control plane's images imported and verified by another, and the
// platform installed by a last one as soon as the cluster's API answers (the provider hands the
// cluster over while it still finishes it: cluster.Request.Ready) and the artifacts are there: the
// objects that need only the API first, then the Gateway, once the images its own Pods start are
// verified (the images it is only told about, for the Sandboxes it creates later, finish beside
// it). On an existing cluster the platform steps follow the group in turn. The Installation is
// written once every image is verified; the control plane of the profile comes after it.
func upSteps(p *Plan) []Step {
	check := "Check the settings and the cluster"
	if !p.Engine.IsZero() {
		// Named after the engine the plan located (Docker or Podman), which the step connects to.
		check = "Check the settings and the " + engineName(p) + " engine"
	}
	steps := []Step{
		{Name: check, Describe: describePreflight, Run: preflight},
		{Name: "Claim the private state directory", Describe: describeState, Run: claimState},
		concurrently("Fetch the artifacts while preparing the cluster", artifactsLane(p), clusterLane(p)),
	}
	if !p.importsImages() {
		steps = append(steps, platformSteps(p)...)
	}
	steps = append(steps, profileSteps(p.profile.BeforeInstallation())...)
	steps = append(steps, Step{Name: "Write the Installation", Describe: describeInstallation, Run: writeInstallation})
	return append(steps, profileSteps(p.profile.ControlPlane())...)
}

// artifactsLane produces the charts and the Agent Sandbox manifest, and checks the Gateway
// chart before anything is installed. The manifest comes before the check: its
// CustomResourceDefinitions are API versions the cluster will serve, which the chart's render
// must see (the chart's Agent Sandbox preflight fails without them). Selected local charts
// replace the archive's three steps, and a selected local manifest the download. The lane's end
// is a readiness (run.artifacts) the platform lane of a k3d cluster waits on.
func artifactsLane(p *Plan) Lane {
	var steps []Step
	if p.selectedCharts != nil {
		steps = append(steps, Step{Name: "Use the selected Gateway and Workspace charts", Describe: describeSelectedCharts, Run: useSelectedCharts})
	} else {
		steps = append(steps,
			Step{Name: "Fetch and verify the OpenShell source archive", Describe: describeArchive, Run: fetchArchive},
			Step{Name: "Extract the Helm charts", Describe: describeExtract, Run: extractCharts},
			Step{Name: "Package the Gateway and Workspace charts", Describe: describePackage, Run: packageCharts},
		)
	}
	manifest := "Fetch and verify the Agent Sandbox manifest"
	if p.AgentSandboxManifest != "" {
		manifest = "Read the selected Agent Sandbox manifest"
	}
	steps = append(steps, Step{Name: manifest, Describe: describeAgentSandboxFetch, Run: fetchAgentSandbox})
	if p.installsRouting() {
		steps = append(steps, Step{Name: "Fetch and verify the routing controller manifests", Describe: describeRoutingFetch, Run: fetchRouting})
	}
	steps = append(steps,
		Step{Name: "Check the images of the rendered Gateway chart", Describe: describeGatewayRender, Run: checkGatewayRender},
		Step{Name: "Render the Workspace chart", Describe: describeRender, Run: renderWorkspace},
	)
	last := len(steps) - 1
	steps[last] = setting(steps[last], func(r *run) *readiness { return &r.artifacts })
	return lane("artifacts", steps...)
}

// clusterLane makes the cluster available. A cluster that pulls its images itself (an existing
// one) is only connected to. A cluster that runs only images occ imports (k3d, a
// cluster.Importer) needs its node and tools images before the provider may create it (occ pulls
// pinned images by digest itself, so k3d never pulls a tag); the OpenShell images are pulled side
// by side with the cluster's creation, each in its own lane but one download at a time, the
// largest (the Sandbox image, images.PullTurns) first, and each is imported into the node as soon
// as its pull is done and the node takes images, then verified there and tagged for the chart, so
// on a slow link the longest import overlaps the downloads of the others, and only the last
// image's import and verification follow its last byte.
// The platform is installed in the same group (platformLane), so the Gateway's install and start
// overlap the last imports too.
func clusterLane(p *Plan) Lane {
	if !p.importsImages() {
		return lane("cluster",
			Step{Name: "Connect to the cluster (" + p.ClusterProvider + ")", Describe: describeCluster, Run: connectCluster},
		)
	}
	steps := profileSteps(p.profile.BeforeCluster())
	for _, slot := range images.ClusterSlots(p.pins) {
		steps = append(steps, imageStep(p, slot))
	}
	// The provider's lane comes first: the other lanes wait on the cluster it makes. The platform
	// lane comes last, after the image lanes it waits on (in that order a Sequential run ends).
	lanes := []Lane{lane(p.ClusterProvider, Step{Name: "Create " + p.ClusterProvider + " cluster " + p.ClusterName, Describe: describeCluster, Run: connectCluster})}
	turns := images.PullTurns(p.pins)
	for _, slot := range images.NodeSlots(p.pins) {
		after := slot // the first pull in turn waits for none
		if i := slices.Index(turns, slot); i > 0 {
			after = turns[i-1]
		}
		lanes = append(lanes, lane(p.image(slot).Role, pullInTurn(p, slot, after), importStep(p, slot), verifyStep(p, slot)))
	}
	lanes = append(lanes, importLane(p), platformLane(p))
	steps = append(steps, concurrently("Create the cluster and install the platform while pulling, importing and verifying the images", lanes...))
	return lane("cluster", steps...)
}

// importLane finishes the other images in the k3d cluster's node: the images the cluster was
// created with checked against their pins, and the control plane's own images (if the profile
// has any) imported in one pass once the cluster exists, and verified there. The OpenShell
// images are imported and verified by their own lanes beside it.
func importLane(p *Plan) Lane {
	steps := []Step{{Name: "Check that the engine's images carry the pinned digests", Describe: describeRepoDigests, Run: checkRepoDigests}}
	if p.profile.ImportImages() != nil {
		steps = append(steps,
			waiting(Step{Name: "Import the control plane's images into the cluster", Describe: describeProfileImport, Run: importProfileImages}, clusterMade),
			Step{Name: "Verify the control plane's images in the node and tag them", Describe: describeVerify, Run: verifyImages},
		)
	}
	return lane("import", steps...)
}

// platformLane installs the platform in the k3d cluster being made: it starts once the cluster
// exists and the artifacts lane has produced the manifest and the checked charts. The objects
// that need only the API come first; none of them runs an image occ imports (the Agent Sandbox
// controller's image is the manifest's own, which the node pulls itself). The Gateway install
// waits for the images the chart's own objects start (the render check found them: for the v0.1
// chart the Gateway image alone); the images the Gateway is only told about (its supervisor and
// Sandbox runtime images, for Sandboxes) finish in their lanes beside it, and the group, which
// every later step follows, ends only when they are verified.
func platformLane(p *Plan) Lane {
	steps := platformSteps(p)
	steps[0] = waiting(steps[0], clusterMade, func(r *run) *readiness { return &r.artifacts })
	for i := range steps {
		switch steps[i].Name {
		case gatewayInstallStep:
			steps[i] = startedImagesFirst(steps[i])
		case routingApplyStep:
			steps[i] = routingImagesFirst(steps[i])
		}
	}
	return lane("platform", steps...)
}

// gatewayInstallStep names the Gateway's install.
const gatewayInstallStep = "Install the OpenShell Gateway chart"

// platformSteps are the platform's steps in order: the objects that need only the cluster's API
// (the Gateway chart's Agent Sandbox preflight needs the CRDs served), the Gateway, the wait
// for it and the Agent Sandbox controller (whose start overlaps the install), and its Health.
func platformSteps(p *Plan) []Step {
	steps := []Step{
		{Name: "Create the platform namespace", Describe: describeNamespace, Run: ensurePlatformNamespace},
		{Name: "Create RuntimeClass " + platform.RuntimeClassName, Describe: describeRuntimeClass, Run: ensureRuntimeClass},
		{Name: "Apply the Agent Sandbox manifest", Describe: describeAgentSandbox, Run: applyAgentSandbox},
	}
	wait := "Wait for the Agent Sandbox controller and the Gateway"
	if p.installsRouting() {
		steps = append(steps, Step{Name: routingApplyStep, Describe: describeRoutingApply, Run: applyRouting})
		wait = "Wait for the Agent Sandbox and routing controllers and the Gateway"
	}
	return append(steps, []Step{
		{Name: "Create the Gateway JWT key Secret", Describe: describeJWTSecret, Run: ensureJWTSecret},
		{Name: "Apply the development NetworkPolicies and RBAC", Describe: describePolicies, Run: applyDevelopmentPolicies},
		{Name: gatewayInstallStep, Describe: describeGateway, Run: installGateway},
		{Name: wait, Describe: describeWait, Run: waitForPlatform},
		{Name: "Check Gateway health", Describe: describeHealth, Run: checkGatewayHealth},
	}...)
}

// Summary is what a successful `up` reports.
type Summary struct {
	// Engine is the container engine the cluster runs in ("Docker 20.10.24 at unix:///…"), or
	// "none (existing cluster)"; EngineKind is its kind (docker or podman), empty without one.
	Engine          string      `json:"engine"`
	EngineKind      engine.Kind `json:"engineKind,omitempty"`
	ClusterProvider string      `json:"clusterProvider"`
	Cluster         string      `json:"cluster"`
	Context         string      `json:"context"`
	// Kubeconfig is the kubeconfig `up` used: for k3d the one it wrote into the state directory
	// (0600); ContainerKubeconfig is its copy for containers on the cluster's engine network.
	Kubeconfig          string `json:"kubeconfig"`
	ContainerKubeconfig string `json:"containerKubeconfig,omitempty"`
	// APIServer is the cluster's Kubernetes API (for k3d on 127.0.0.1 at the chosen port).
	APIServer string `json:"apiServer"`
	// Images are the pinned OpenShell images imported into the cluster and verified in its node.
	Images          []string `json:"images,omitempty"`
	Namespace       string   `json:"namespace"`
	GatewayEndpoint string   `json:"gatewayEndpoint"`
	Installation    string   `json:"installation"`
	// Routing names the routing controllers installed, or says why none are.
	Routing string `json:"routing"`
	// ControlPlane says what of the profile's OCE control plane `up` did not start (no checkout
	// was found); empty when it started it.
	ControlPlane string `json:"controlPlane,omitempty"`
	// OCE is the OCE control plane `up` started: where it runs, its drivers, API URL,
	// Installation ID and bootstrap key file.
	OCE            *OCESummary `json:"oce,omitempty"`
	StateDirectory string      `json:"stateDirectory"`
	DownCommand    string      `json:"downCommand"`
}

// Up brings the development platform up on the chosen cluster. Everything it creates is
// recorded in the private state before or as it is created. When a step fails, what was
// recorded is removed again in reverse order on a fresh, bounded context; the state directory
// is deleted only when that cleanup is complete, and otherwise kept with the exact command that
// finishes it.
func Up(ctx context.Context, opts UpOptions) (_ *Summary, err error) {
	opts.lookup = ctx
	p, err := resolvePlan(opts)
	if err != nil {
		return nil, err
	}
	if err := p.profile.Refusal(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	// The steps' timeline goes into the debug bundle of a failure.
	var timeline *diagnose.Timeline
	if !opts.NoDiagnose {
		timeline = diagnose.NewTimeline(time.Now())
		opts.Progress = timeline.Record(opts.Progress)
	}
	r := &run{plan: p, opts: opts, log: &step.SyncWriter{W: log}, provider: p.openProvider()}
	r.makeImageSlots()
	defer r.close()
	defer func() {
		if r.state == nil {
			return
		}
		if err != nil {
			// The bundle is written first: the rollback removes what it shows.
			bundle := observe.FailureBundle(ctx, observe.FailedRun{
				BundleInput: observe.BundleInput{Dir: r.state.Path(), State: r.state.State(), Version: opts.OCCVersion, Plan: r.plan, Cause: err, Timeline: timeline},
				Command:     "up", Collected: "Collected before the rollback.", Off: opts.NoDiagnose,
			})
			err = recorded.Rollback{Dir: r.state, Log: r.log, Kept: r.keptCluster.Load(), Provider: p.ClusterProvider, OCC: opts.OCCCommand,
				Outside: func() error { return p.profile.Rollback(r) }}.Run(interrupt.AbortContext(ctx), err)
			if bundle != "" {
				err = fmt.Errorf("%w\n%s", err, bundle)
			}
			return
		}
		if cerr := r.state.Close(); cerr != nil {
			err = fmt.Errorf("release the state directory lock: %w", cerr)
		}
	}()
	x := &runner{Sink: opts.Progress, AfterStep: opts.deps.AfterStep, Sequential: opts.deps.Sequential}
	if err := x.Run(ctx, r, upSteps(p), ""); err != nil {
		return nil, err
	}
	sum := &Summary{
		Engine:              engineOf(r),
		EngineKind:          engineKindOf(r),
		ClusterProvider:     p.ClusterProvider,
		Cluster:             r.conn.Access.Name,
		Context:             r.conn.Access.Context,
		Kubeconfig:          r.conn.Access.Kubeconfig,
		ContainerKubeconfig: r.conn.Access.ContainerKubeconfig,
		APIServer:           r.conn.Access.Server,
		Namespace:           p.Namespace,
		GatewayEndpoint:     r.gatewayEndpoint,
		Installation:        r.installationPath,
		ControlPlane:        p.profile.Pending(),
		StateDirectory:      r.state.Path(),
		DownCommand:         DownCommand(opts.OCCCommand, r.state.Path()),
	}
	for _, v := range r.verifiedImages() {
		sum.Images = append(sum.Images, v.Reference)
	}
	route := ""
	if sum.OCE = p.profile.Summary(r); sum.OCE != nil {
		route = sum.OCE.Route
	}
	sum.Routing = p.routingSummary(route)
	return sum, nil
}

// engineOf names the container engine behind the cluster; an existing cluster needs none.
func engineOf(r *run) string {
	if r.engine == nil {
		return "none (existing cluster)"
	}
	return fmt.Sprintf("%s %s at %s (from %s)", engineName(r.plan), r.engine.Identity.Version, r.engine.Endpoint, r.plan.EngineSource)
}

// engineKindOf is the kind of the engine the run used, empty when it used none.
func engineKindOf(r *run) engine.Kind {
	if r.engine == nil {
		return ""
	}
	return engineKind(r.plan)
}
