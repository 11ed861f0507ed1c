package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openclaw/occ/internal/occdev/state"
)

// rollbackTimeout bounds the cleanup after a failed `up`. It runs on a fresh context, so a
// Ctrl-C that ended `up` does not also end the cleanup of what `up` made.
const rollbackTimeout = 2 * time.Minute

// upSteps is the whole `occ dev up` flow, in order.
func upSteps(p *Plan) []Step {
	return []Step{
		{Name: "Claim the private state directory", Describe: describeState, Run: claimState},
		{Name: "Resolve the pinned artifacts", Describe: describePins, Run: resolvePins},
		{Name: "Fetch and verify the OpenShell source archive", Describe: describeArchive, Run: fetchArchive},
		{Name: "Extract the Helm charts", Describe: describeExtract, Run: extractCharts},
		{Name: "Package the Gateway and Workspace charts", Describe: describePackage, Run: packageCharts},
		{Name: "Render the Workspace chart", Describe: describeRender, Run: renderWorkspace},
		{Name: "Connect to the cluster (" + p.ClusterProvider + ")", Describe: p.provider.Describe, Run: connectCluster},
		{Name: "Create the platform namespace", Describe: func(p *Plan) []string { return []string{"Namespace " + p.Namespace} }, Run: ensurePlatformNamespace},
		{Name: "Create RuntimeClass " + RuntimeClassName, Describe: func(*Plan) []string {
			return []string{"RuntimeClass " + RuntimeClassName + " (handler " + RuntimeClassHandler + ")"}
		}, Run: ensureRuntimeClass},
		{Name: "Apply the Agent Sandbox manifest", Describe: describeAgentSandbox, Run: applyAgentSandbox},
		{Name: "Create the Gateway JWT key Secret", Describe: func(p *Plan) []string {
			return []string{"Secret " + p.Namespace + "/" + GatewayJWTSecretName + " (a new ed25519 key; never printed or stored in the state)"}
		}, Run: ensureJWTSecret},
		{Name: "Install the OpenShell Gateway chart", Describe: describeGateway, Run: installGateway},
		{Name: "Apply the development NetworkPolicies and RBAC", Describe: describePolicies, Run: applyDevelopmentPolicies},
		{Name: "Wait for the Agent Sandbox controller and the Gateway", Describe: func(p *Plan) []string {
			return []string{fmt.Sprintf("nothing created; waits by watch up to %s per workload", p.StartupTimeout)}
		}, Run: waitForPlatform},
		{Name: "Check Gateway health", Describe: func(p *Plan) []string {
			if p.GatewayEndpoint != "" {
				return []string{"nothing created; calls Health at " + p.GatewayEndpoint}
			}
			return []string{"nothing created; calls Health through a port-forward to a Gateway Pod"}
		}, Run: checkGatewayHealth},
		{Name: "Write the Installation", Describe: func(p *Plan) []string {
			return []string{"file " + p.StateDir + "/" + InstallationFileName + " (validated by the Sandbox Driver's rules)"}
		}, Run: writeInstallationStep},
	}
}

// PlannedStep is one step of a dry run and what it would create.
type PlannedStep struct {
	Name    string   `json:"name"`
	Creates []string `json:"creates"`
}

// DryRun is what `up --dry-run` reports.
type DryRun struct {
	Plan  *Plan         `json:"plan"`
	Steps []PlannedStep `json:"steps"`
}

// Summary is what a successful `up` reports.
type Summary struct {
	Engine          string `json:"engine"`
	ClusterProvider string `json:"clusterProvider"`
	Cluster         string `json:"cluster"`
	Context         string `json:"context"`
	Kubeconfig      string `json:"kubeconfig"`
	Namespace       string `json:"namespace"`
	GatewayEndpoint string `json:"gatewayEndpoint"`
	Installation    string `json:"installation"`
	StateDirectory  string `json:"stateDirectory"`
	DownCommand     string `json:"downCommand"`
}

// Plan resolves and validates opts without touching anything; `up --dry-run` prints it.
func PlanUp(opts UpOptions) (*DryRun, error) {
	p, err := resolvePlan(opts)
	if err != nil {
		return nil, err
	}
	dr := &DryRun{Plan: p}
	for _, s := range upSteps(p) {
		dr.Steps = append(dr.Steps, PlannedStep{Name: s.Name, Creates: s.Describe(p)})
	}
	return dr, nil
}

// Up brings the development platform up on the chosen cluster. Everything it creates is
// recorded in the private state before or as it is created. When a step fails, what was
// recorded is removed again in reverse order on a fresh, bounded context; the state directory
// is deleted only when that cleanup is complete, and otherwise kept with the exact command that
// finishes it.
func Up(ctx context.Context, opts UpOptions) (_ *Summary, err error) {
	p, err := resolvePlan(opts)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = nopProgress{}
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	sc := &StepContext{Plan: p, opts: opts, log: log}
	defer func() {
		if sc.state == nil {
			return
		}
		if err != nil {
			err = rollback(sc, err, opts.OCCCommand)
			return
		}
		if cerr := sc.state.Close(); cerr != nil {
			err = fmt.Errorf("release the state directory lock: %w", cerr)
		}
	}()
	if err := runSteps(ctx, sc, upSteps(p), progress, opts.AfterStep); err != nil {
		return nil, err
	}
	return &Summary{
		Engine:          engineOf(p),
		ClusterProvider: p.ClusterProvider,
		Cluster:         sc.cluster.access.Name,
		Context:         sc.cluster.access.Context,
		Kubeconfig:      sc.cluster.access.Kubeconfig,
		Namespace:       p.Namespace,
		GatewayEndpoint: sc.gatewayEndpoint,
		Installation:    sc.installationPath,
		StateDirectory:  sc.state.Path(),
		DownCommand:     DownCommand(opts.OCCCommand, sc.state.Path()),
	}, nil
}

// engineOf names the container engine behind the cluster; an existing cluster needs none.
func engineOf(p *Plan) string {
	if p.ClusterProvider == ProviderExisting {
		return "none (existing cluster)"
	}
	return p.ClusterProvider
}

// rollback removes what the failed `up` recorded, on its own context so Ctrl-C cannot stop it
// half-way, and folds the outcome into the error.
func rollback(sc *StepContext, cause error, occ string) error {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	dir := sc.state.Path()
	cerr := cleanup(ctx, sc.state, sc.log)
	if cerr == nil {
		cerr = sc.state.Remove()
	}
	if cerr != nil {
		_ = sc.state.Close()
		return fmt.Errorf("%w\nrollback incomplete; preserving %s for occ dev down: %v\nfinish the cleanup with: %s", cause, dir, cerr, DownCommand(occ, dir))
	}
	return fmt.Errorf("%w\nrolled back: everything this run created was removed, and %s was deleted", cause, dir)
}

// claimState creates the private state directory, takes its lock, and writes the marker and
// state.json before anything outside the directory is changed.
func claimState(_ context.Context, sc *StepContext) error {
	if sc.state != nil {
		return nil // already claimed and locked by this run
	}
	d, err := state.Create(sc.Plan.StateDir, state.State{
		Profile: string(sc.Plan.ControlPlane),
		Cluster: state.Cluster{Provider: sc.Plan.ClusterProvider},
	})
	if err != nil {
		if errors.Is(err, state.ErrInUse) || errors.Is(err, state.ErrExists) {
			return err
		}
		return fmt.Errorf("claim state directory %s: %w", sc.Plan.StateDir, err)
	}
	sc.state = d
	sc.owner = ownerID(d.State())
	return nil
}

func describeState(p *Plan) []string {
	return []string{"directory " + p.StateDir + " (0700, locked), its marker and state.json (0600), before anything else"}
}
