package occdev_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// legacyEngineEnv names the DOCKER_HOST of the bed's Docker 20.10 engine (Debian's docker.io),
// which `make test` exports for the test of the builder refusal.
const legacyEngineEnv = "OCC_TEST_DOCKER_LEGACY_HOST"

// checkoutOptions are the options of an `up` from a fixture checkout copy that is refused before
// anything is created: a state directory and a cache of its own, the engine at dockerHost.
func checkoutOptions(t *testing.T, plane occdev.ControlPlane, checkout, dockerHost string) occdev.UpOptions {
	t.Helper()
	dir := t.TempDir()
	return occdev.UpOptions{
		StateDir: filepath.Join(dir, "state"), ControlPlane: plane, CacheDir: filepath.Join(dir, "cache"),
		ClusterSettings: occdev.K3dSettings(k3d.ClusterOptions{ClusterName: fmt.Sprintf("occ-dev-%x", time.Now().UnixNano()%0xfffffff)}),
		OCE:             occdev.OCEOptions{Repository: checkout, WorkingDir: checkout, ComposeProject: fmt.Sprintf("occ_refused_%d", time.Now().UnixNano()%1e9)},
		Settings:        kubernetesSettings(occdev.KubernetesOptions{DevPort: freeLoopbackPort(t)}),
		Docker: locate.Env{Getenv: func(k string) string {
			if k == "DOCKER_HOST" {
				return dockerHost
			}
			return ""
		}},
	}
}

// noEngine is a Docker host with no engine behind it, for what must stop before an engine is
// contacted (a dry run, a refusal).
const noEngine = "unix:///nonexistent/docker.sock"

// fixtureOptions are checkoutOptions for plane on a fresh copy of the fixture checkout, with
// no engine behind them: the options of a dry run.
func fixtureOptions(t *testing.T, plane occdev.ControlPlane) occdev.UpOptions {
	t.Helper()
	return checkoutOptions(t, plane, ocebed.Checkout(t, fixtureCommit), noEngine)
}

// planUp is the dry run of opts, which must succeed.
func planUp(t *testing.T, opts occdev.UpOptions) *occdev.DryRun {
	t.Helper()
	dr, err := occdev.PlanUp(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return dr
}

// An OCE checkout whose chart is newer than this occ: its validation gained a `fail` rule for a
// value occ does not set. The dry run and `up --control-plane kubernetes` both stop with the
// chart's own message before the state directory exists, and nothing is contacted (the engine
// named does not exist).
func TestOCEChartFailStopsTheDryRunAndUpBeforeTheState(t *testing.T) {
	checkout := ocebed.Checkout(t, fixtureCommit)
	helpers := filepath.Join(checkout, filepath.FromSlash(kubernetes.ChartPath), "templates", "_helpers.tpl")
	data, err := os.ReadFile(helpers)
	if err != nil {
		t.Fatal(err)
	}
	const rule = "{{- if not .Values.installation.region -}}{{- fail \"installation.region must name the data residency region\" -}}{{- end -}}"
	patched := strings.Replace(string(data), `{{- define "openclaw.validate" -}}`, `{{- define "openclaw.validate" -}}`+"\n"+rule, 1)
	if err := os.WriteFile(helpers, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := checkoutOptions(t, occdev.ControlPlaneKubernetes, checkout, noEngine)
	for name, run := range map[string]func() error{
		"dry run": func() error { _, err := occdev.PlanUp(context.Background(), opts); return err },
		"up":      func() error { _, err := occdev.Up(context.Background(), opts); return err },
	} {
		err := run()
		var ce *kubernetes.ChartError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "installation.region must name the data residency region") || !strings.Contains(err.Error(), "nothing was created") {
			t.Errorf("%s: %v, want the chart's refusal", name, err)
		}
		if !stateGone(opts.StateDir) {
			t.Errorf("%s created the state directory", name)
		}
	}
}

// An OCE engineer adds `-f compose.metrics.yaml` as they would with `docker compose`, and
// previews it: the plan lists every service of the merged model in the order Compose starts it,
// with why, the one service that cannot run in this profile (its worker agent needs the Docker
// Compute worker) left out with the reason and no problem for it, and every base image of the
// builds by digest. Nothing is created.
func TestDryRunListsOverlayServicesAndBaseImages(t *testing.T) {
	opts := fixtureOptions(t, occdev.ControlPlaneCompose)
	opts.OCE.Environment = map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": "grafana-canary"}
	opts.OCE.ComposeArgs = []string{"-f", "compose.metrics.yaml"}
	dr := planUp(t, opts)
	for _, p := range dr.Problems {
		if strings.Contains(p, "metrics-worker") {
			t.Errorf("a problem for the left-out service: %s", p)
		}
	}
	doc := dr.Plan.OCE.(*composeprofile.Document)
	var lines []string
	for _, s := range doc.Compose.Services {
		lines = append(lines, fmt.Sprintf("%s %v", s.Name, s.Started))
		if s.Name == "metrics-worker" && !strings.HasPrefix(s.Why, "left out, as it cannot run in this profile: it needs worker") {
			t.Errorf("metrics-worker: %s", s.Why)
		}
	}
	if got := strings.Join(lines, ", "); got != "postgres true, migrate true, bootstrap true, controller true, worker-kubernetes true, prometheus true, grafana true, metrics-api true, metrics-worker false, worker false" {
		t.Errorf("services: %s", got)
	}
	var bases []string
	for _, b := range doc.BaseImages {
		bases = append(bases, b.Image+" from "+b.Source)
	}
	want := []string{
		"docker.io/library/node:24-bookworm from the Compose build argument NODE_BASE_IMAGE of migrate, bootstrap, controller, worker-kubernetes",
		fixtureSlimBase + " from the default of ARG NODE_RUNTIME_BASE_IMAGE (deploy/runtime/Dockerfile:10)",
		fixtureRuntimeNodeBase + " from the default of ARG NODE_BASE_IMAGE (deploy/runtime/Dockerfile:9)",
	}
	if strings.Join(bases, "\n") != strings.Join(want, "\n") {
		t.Errorf("base images:\n%s\nwant:\n%s", strings.Join(bases, "\n"), strings.Join(want, "\n"))
	}
	if !doc.BaseImages[0].Tag {
		t.Errorf("the Compose default node:24-bookworm is not marked as a tag to resolve")
	}
	found := false
	for _, s := range dr.Steps {
		found = found || s.Name == "Start the services the Compose options add: prometheus, grafana, metrics-api"
		for _, l := range s.Lanes {
			for _, ls := range l.Steps {
				found = found || ls.Name == "Start the services the Compose options add: prometheus, grafana, metrics-api"
			}
		}
	}
	if !found {
		t.Errorf("no step starts the added services")
	}
	if !stateGone(opts.StateDir) {
		t.Error("the dry run created the state directory")
	}
}

// An engineer on Debian's docker.io 20.10 runs `occ dev up` in both profiles: the engine's
// builder cannot read the runtime Dockerfile's here-document, so the preflight refuses, naming
// the engine's version, the Dockerfile and line, and both fixes, before the state directory
// exists, and nothing is pulled, built or started on the engine; the dry run lists the same
// refusal as a problem.
func TestLegacyEngineRefusesTheCheckoutsHeredoc(t *testing.T) {
	host := os.Getenv(legacyEngineEnv)
	if host == "" {
		if os.Getenv("OCC_TEST_DOCKER") == "skip" {
			t.Skipf("skipped because OCC_TEST_DOCKER=skip: %s is not set", legacyEngineEnv)
		}
		t.Fatalf("%s is not set: set it to the DOCKER_HOST of a Docker 20.10 engine (scripts/testdocker legacy), or OCC_TEST_DOCKER=skip", legacyEngineEnv)
	}
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ctx := context.Background()
	v, err := api.ServerVersion(ctx)
	if err != nil {
		t.Fatalf("the legacy engine at %s: %v", host, err)
	}
	if !strings.HasPrefix(v.Version, "20.10") {
		t.Fatalf("%s=%s is Docker %s (API %s), not 20.10", legacyEngineEnv, host, v.Version, v.APIVersion)
	}
	// The k3d provider points this process's environment at the engine it drives (k3d reads
	// it) and leaves it so; the tests after this one must get the bed's engine back.
	for _, k := range []string{"DOCKER_HOST", "DOCKER_SOCK", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_TLS", "K3D_IMAGE_TOOLS"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v)
		} else {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	checkout := ocebed.Checkout(t, fixtureCommit)
	for _, plane := range []occdev.ControlPlane{occdev.ControlPlaneCompose, occdev.ControlPlaneKubernetes} {
		t.Run(string(plane), func(t *testing.T) {
			opts := checkoutOptions(t, plane, checkout, host)
			dr := planUp(t, opts)
			_, err := occdev.Up(ctx, opts)
			var be *controlplane.BuilderError
			if !errors.As(err, &be) {
				t.Fatalf("up: %v, want the builder refusal", err)
			}
			t.Logf("up on Docker %s: %v", v.Version, err)
			for _, w := range []string{"Check the settings and the Docker engine", "Docker Engine " + v.Version + " (API " + v.APIVersion + ")",
				"the here-document at deploy/runtime/Dockerfile:61 (RUN node --input-type=module <<'NODE')", "Upgrade to Docker Engine 23.0 or later",
				controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage, "nothing was created"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.Contains(strings.Join(dr.Problems, "\n"), "the here-document at deploy/runtime/Dockerfile:61") {
				t.Errorf("the dry run's problems lack the builder refusal: %q", dr.Problems)
			}
			if !stateGone(opts.StateDir) {
				t.Error("the state directory was created")
			}
			// Nothing on the engine: no base image pulled, no container of the project or the
			// cluster.
			for _, ref := range []string{fixtureSlimBase, fixtureRuntimeNodeBase, pinnedNodeBase} {
				if _, err := api.ImageInspect(ctx, ref); !cerrdefs.IsNotFound(err) {
					t.Errorf("base image %s is in the engine (%v)", ref, err)
				}
			}
			for _, f := range []filters.KeyValuePair{filters.Arg("label", "com.docker.compose.project="+opts.OCE.ComposeProject), filters.Arg("name", opts.K3d().ClusterName)} {
				list, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(f)})
				if err != nil || len(list) > 0 {
					t.Errorf("containers %v: %v (%v)", f, list, err)
				}
			}
		})
	}
}

// A developer points the Node bases at a mirror but writes a tag: both overrides are pins and
// must be digests, so the plan refuses the setting by name in either profile before anything
// runs; given by digest, the override replaces the base of every build that uses it.
func TestBaseOverridesAreDigestPins(t *testing.T) {
	checkout := ocebed.Checkout(t, fixtureCommit)
	for _, plane := range []occdev.ControlPlane{occdev.ControlPlaneCompose, occdev.ControlPlaneKubernetes} {
		t.Run(string(plane), func(t *testing.T) {
			opts := checkoutOptions(t, plane, checkout, noEngine)
			opts.OCE.NodeRuntimeBaseImage = "mirror.example/node:24-bookworm-slim"
			_, err := occdev.PlanUp(context.Background(), opts)
			var oe *occdev.OptionError
			if !errors.As(err, &oe) || oe.Option != controlplane.EnvNodeRuntimeBaseImage || !strings.Contains(err.Error(), "mirror.example/node:24-bookworm-slim") {
				t.Fatalf("a tag override: %v", err)
			}
			mirror := "mirror.example/node@sha256:" + strings.Repeat("e", 64)
			opts.OCE.NodeBaseImage, opts.OCE.NodeRuntimeBaseImage = mirror, mirror
			dr := planUp(t, opts)
			bases := ocePlan(t, dr.Plan.OCE).BaseImages
			if len(bases) != 1 || bases[0].Image != mirror || bases[0].Source != controlplane.EnvNodeBaseImage {
				t.Fatalf("bases with both overrides: %+v", bases)
			}
		})
	}
}

// An OCE engineer whose pins record the routing controllers previews the default Compose
// profile from a checkout: the plan names the private Agent Gateway route beside the cluster,
// and its step, between the platform and the Installation that names it, lists the namespace,
// the key file and Secret, the chart's route template and the CA file. Without a checkout the
// platform's route stands and no such step is planned.
func TestDryRunNamesTheComposeRoute(t *testing.T) {
	pinFile := occdev.RoutedPinFile(t)
	opts := fixtureOptions(t, occdev.ControlPlaneCompose)
	opts.PinFile = pinFile
	dr := planUp(t, opts)
	if !strings.HasPrefix(dr.Plan.Routing.Route, "Gateway oce-system/openclaw-enterprise-agent-gateways") {
		t.Errorf("the plan's route %q", dr.Plan.Routing.Route)
	}
	var names []string
	var route *occdev.PlannedStep
	for i, s := range dr.Steps {
		names = append(names, s.Name)
		if s.Name == "Set up the private Agent Gateway route" {
			route = &dr.Steps[i]
		}
	}
	at := slices.Index(names, "Set up the private Agent Gateway route")
	if route == nil || at+1 >= len(names) || names[at+1] != "Write the Installation" {
		t.Fatalf("the route's step is not right before the Installation: %q", names)
	}
	if at := slices.Index(names, "Start the controller and worker-kubernetes"); at < 0 || at+1 >= len(names) || names[at+1] != "Admit the controller and worker-kubernetes to the private route" {
		t.Errorf("the services are not admitted to the route right after they start: %q", names)
	}
	d := strings.Join(route.Creates, "\n") + "\n" + route.Note
	for _, want := range []string{"Namespace oce-system", "file " + filepath.Join(opts.StateDir, "gateway-api-key") + " (0600; O_EXCL", "Secret oce-system/occ-private-gateway-key (key occ",
		"Gateway oce-system/openclaw-enterprise-agent-gateways (listener named after the node", "Certificate oce-system/openclaw-enterprise-agent-gateways-tls (waited for Ready)",
		"SecurityPolicy oce-system/openclaw-enterprise-agent-gateways-api-key", "NetworkPolicy envoy-gateway-system/openclaw-enterprise-",
		"deploy/helm/openclaw-enterprise/templates/gateway-routing.yaml alone", "file " + filepath.Join(opts.StateDir, "gateway-ca.crt") + " (0600", "only CAP_CHOWN"} {
		if !strings.Contains(d, want) {
			t.Errorf("the route's step lacks %q:\n%s", want, d)
		}
	}

	// Without a checkout only the platform comes up, with its own route.
	bare := checkoutOptions(t, occdev.ControlPlaneCompose, "", noEngine)
	bare.OCE = occdev.OCEOptions{WorkingDir: t.TempDir()}
	bare.PinFile = pinFile
	dr = planUp(t, bare)
	if dr.Plan.Routing.Route != "" || len(dr.Plan.Routing.Controllers) != 2 {
		t.Errorf("routing without a checkout: %+v", dr.Plan.Routing)
	}
	for _, s := range dr.Steps {
		if strings.Contains(s.Name, "private Agent Gateway route") || strings.Contains(s.Name, "to the private route") {
			t.Errorf("a route step without a checkout: %s", s.Name)
		}
	}
}

// ocePlan is the OCE plan every profile shares, from a built-in profile's plan document.
func ocePlan(t *testing.T, d profile.Document) *oce.Plan {
	t.Helper()
	switch d := d.(type) {
	case *composeprofile.Document:
		return d.Plan
	case *kubeprofile.Document:
		return d.Plan
	}
	t.Fatalf("the plan document is a %T", d)
	return nil
}
