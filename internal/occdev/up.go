package occdev

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// rollbackTimeout bounds the cleanup after a failed `up`. It runs on a fresh context, so a
// Ctrl-C that ended `up` does not also end the cleanup of what `up` made.
const rollbackTimeout = 2 * time.Minute

// upSteps is the whole `occ dev up` flow, in order. The cheap checks come first; the artifacts
// are fetched while the cluster is made available; then the platform is installed on it.
func upSteps(p *Plan) []Step {
	return []Step{
		{Name: "Check the settings and the cluster", Describe: describePreflight, Run: preflight},
		{Name: "Claim the private state directory", Describe: describeState, Run: claimState},
		concurrently("Fetch the artifacts while connecting to the cluster",
			lane("artifacts",
				Step{Name: "Fetch and verify the OpenShell source archive", Describe: describeArchive, Run: fetchArchive},
				Step{Name: "Extract the Helm charts", Describe: describeExtract, Run: extractCharts},
				Step{Name: "Package the Gateway and Workspace charts", Describe: describePackage, Run: packageCharts},
				Step{Name: "Render the Workspace chart", Describe: describeRender, Run: renderWorkspace},
				Step{Name: "Fetch and verify the Agent Sandbox manifest", Describe: describeAgentSandboxFetch, Run: fetchAgentSandbox},
			),
			lane("cluster",
				Step{Name: "Connect to the cluster (" + p.ClusterProvider + ")", Describe: describeCluster, Run: connectCluster},
			),
		),
		{Name: "Create the platform namespace", Describe: describeNamespace, Run: ensurePlatformNamespace},
		{Name: "Create RuntimeClass " + RuntimeClassName, Describe: describeRuntimeClass, Run: ensureRuntimeClass},
		{Name: "Apply the Agent Sandbox manifest", Describe: describeAgentSandbox, Run: applyAgentSandbox},
		{Name: "Create the Gateway JWT key Secret", Describe: describeJWTSecret, Run: ensureJWTSecret},
		{Name: "Install the OpenShell Gateway chart", Describe: describeGateway, Run: installGateway},
		{Name: "Apply the development NetworkPolicies and RBAC", Describe: describePolicies, Run: applyDevelopmentPolicies},
		{Name: "Wait for the Agent Sandbox controller and the Gateway", Describe: describeWait, Run: waitForPlatform},
		{Name: "Check Gateway health", Describe: describeHealth, Run: checkGatewayHealth},
		{Name: "Write the Installation", Describe: describeInstallation, Run: writeInstallation},
	}
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
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	r := &run{plan: p, opts: opts, log: &syncWriter{w: log}}
	defer func() {
		if r.state == nil {
			return
		}
		if err != nil {
			err = rollback(r, err, opts.OCCCommand)
			return
		}
		if cerr := r.state.Close(); cerr != nil {
			err = fmt.Errorf("release the state directory lock: %w", cerr)
		}
	}()
	x := &runner{sink: opts.Progress, afterStep: opts.AfterStep}
	if err := x.run(ctx, r, upSteps(p), ""); err != nil {
		return nil, err
	}
	return &Summary{
		Engine:          engineOf(p),
		ClusterProvider: p.ClusterProvider,
		Cluster:         r.conn.Access.Name,
		Context:         r.conn.Access.Context,
		Kubeconfig:      r.conn.Access.Kubeconfig,
		Namespace:       p.Namespace,
		GatewayEndpoint: r.gatewayEndpoint,
		Installation:    r.installationPath,
		StateDirectory:  r.state.Path(),
		DownCommand:     DownCommand(opts.OCCCommand, r.state.Path()),
	}, nil
}

// engineOf names the container engine behind the cluster; an existing cluster needs none.
func engineOf(p *Plan) string {
	if p.ClusterProvider == ProviderExisting {
		return "none (existing cluster)"
	}
	return p.ClusterProvider
}

// rollback removes what the failed `up` recorded (by every lane), on its own context so Ctrl-C
// cannot stop it half-way, and folds the outcome into the error. It runs only after every lane
// has stopped, so nothing is still being created while it removes.
func rollback(r *run, cause error, occ string) error {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	dir := r.state.Path()
	_, cerr := cleanup(ctx, r.state, r.log)
	if cerr == nil {
		cerr = r.state.Remove()
	}
	if cerr != nil {
		_ = r.state.Close()
		return fmt.Errorf("%w\nrollback incomplete; preserving %s for occ dev down: %v\nfinish the cleanup with: %s", cause, dir, cerr, DownCommand(occ, dir))
	}
	return fmt.Errorf("%w\nrolled back: everything this run created was removed, and %s was deleted", cause, dir)
}

// syncWriter serialises the log writes of concurrent lanes.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
