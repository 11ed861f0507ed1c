package compose

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// metricsEnv is what an engineer sets for the metrics overlay: its Grafana password (the
// overlay's `:?` refuses to render without one).
var metricsEnv = map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": "grafana-canary-password"}

// loggingEnv is what an engineer sets for the logging overlay: where its Collector exports
// logs (the overlay's `:?` refuses to render without it).
var loggingEnv = map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://127.0.0.1:4318/v1/logs"}

// disableMetricsWorker is the overlay that opts out of the metrics overlay's worker agent
// explicitly, with a Compose profile occ never enables.
const disableMetricsWorker = "services:\n  metrics-worker:\n    profiles: [docker-compute]\n"

func statusOf(services []ServiceStatus) map[string]ServiceStatus {
	out := map[string]ServiceStatus{}
	for _, s := range services {
		out[s.Name] = s
	}
	return out
}

// Without options after --, the merged model is the checkout's two files: the profile's five
// services start, and compose.yaml's Docker Compute worker is listed as not started, with why.
func TestServicesOfTheCheckoutAreListed(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Services()
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "postgres migrate bootstrap controller worker-kubernetes worker" {
		t.Fatalf("services %v", names)
	}
	st := statusOf(got)
	for _, n := range RequiredServices {
		if !st[n].Started || st[n].Why == "" {
			t.Errorf("%s: %+v", n, st[n])
		}
	}
	if w := st[ServiceDockerWorker]; w.Started || !strings.Contains(w.Why, "the Docker Compute worker of compose.yaml") {
		t.Errorf("worker: %+v", w)
	}
	if len(m.Added) != 0 {
		t.Errorf("added services %v", m.Added)
	}
}

// An OCE engineer adds `-f compose.metrics.yaml` as they would with `docker compose`: its
// worker agent shares the network namespace of the Docker Compute worker, which this profile
// never starts, so it alone is left out, with why; the rest of the stack starts after the API
// services in the order Compose starts it (the server before what needs it), and
// worker-kubernetes gets the metrics settings the overlay gives the Docker Compute worker.
func TestMetricsOverlayLeavesOutTheServiceThatCannotRun(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, metricsEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.StartedServices(), " "); got != "postgres migrate bootstrap controller worker-kubernetes prometheus grafana metrics-api" {
		t.Errorf("started in the order %s", got)
	}
	if strings.Join(m.Added, " ") != "prometheus grafana metrics-api" || strings.Join(m.DataStage(), " ") != "postgres migrate bootstrap" || strings.Join(m.APIStage(), " ") != "controller worker-kubernetes" {
		t.Errorf("stages: data %v, API %v, added %v", m.DataStage(), m.APIStage(), m.Added)
	}
	st := statusOf(m.Services())
	w := st["metrics-worker"]
	for _, want := range []string{"left out, as it cannot run in this profile: it needs worker (depends_on, network_mode), which this profile does not start (the Docker Compute worker of compose.yaml"} {
		if w.Started || !strings.Contains(w.Why, want) {
			t.Errorf("metrics-worker %+v, want its reason to say %q", w, want)
		}
	}
	env := m.Project.Services[ServiceWorker].Environment
	for k, v := range map[string]string{"OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "127.0.0.1", "OCC_METRICS_PORT": "9464"} {
		if env[k] == nil || *env[k] != v {
			t.Errorf("worker-kubernetes %s = %v, want %s", k, env[k], v)
		}
	}
	if why := st[ServiceWorker].Why; !strings.Contains(why, "with OCC_METRICS_ENABLED, OCC_METRICS_HOST, OCC_METRICS_PORT as the Compose options give them to worker") {
		t.Errorf("worker-kubernetes: %s", why)
	}
	p := m.Plan()
	if len(p.Services) != 10 || p.Services[9].Name != ServiceDockerWorker || p.Services[8].Name != "metrics-worker" || p.Services[8].Started {
		t.Errorf("plan services %+v", p.Services)
	}
	if strings.Contains(mustMarshal(t, p), metricsEnv["OCC_METRICS_GRAFANA_PASSWORD"]) {
		t.Error("the plan shows the Grafana password")
	}
	// The overlay's own required variable is Compose's to refuse, with its message.
	if _, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "Choose a development Grafana password") {
		t.Errorf("without the Grafana password: %v", err)
	}
}

// An OCE engineer adds `-f compose.logging.yaml`: migrate, bootstrap and the controller depend on
// its Collector, so Compose starts the Collector with the data services, before migrate, and
// the plan says so; the controller and worker-kubernetes keep reading the Installation occ
// writes, whatever configuration the overlay points OCC_CONFIG_PATH at; nothing of the Docker
// Compute worker's logging settings reaches worker-kubernetes.
func TestLoggingOverlayCollectorStartsWithTheDataServices(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.logging.yaml")}, loggingEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.StartedServices(), " "); got != "postgres collector migrate bootstrap controller worker-kubernetes" {
		t.Errorf("started in the order %s", got)
	}
	if strings.Join(m.DataStage(), " ") != "postgres collector migrate bootstrap" || len(m.Added) != 0 {
		t.Errorf("stages: data %v, API %v, added %v", m.DataStage(), m.APIStage(), m.Added)
	}
	st := statusOf(m.Services())
	if c := st["collector"]; !c.Started || c.Why != "added by the Compose options after --; started with the data services, since migrate and bootstrap need it" {
		t.Errorf("collector %+v", c)
	}
	for _, name := range APIServices {
		env := m.Project.Services[name].Environment
		if v := env[EnvConfigPath]; v == nil || *v != "/run/openclaw-development/installation.yaml" {
			t.Errorf("%s %s = %v", name, EnvConfigPath, v)
		}
	}
	if why := st[ServiceController].Why; !strings.Contains(why, "OCC_CONFIG_PATH stays /run/openclaw-development/installation.yaml, the Installation occ writes (the Compose options set /etc/openclaw/occ.yaml)") {
		t.Errorf("controller: %s", why)
	}
	if v := m.Project.Services[ServiceWorker].Environment["OCC_DOCKER_LOGGING_ADDRESS"]; v != nil {
		t.Errorf("worker-kubernetes got the Docker Compute worker's OCC_DOCKER_LOGGING_ADDRESS %q", *v)
	}
	// The overlay's own required variable is Compose's to refuse, with its message.
	if _, err := b.load([]string{filepath.Join(b.checkout, "compose.logging.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "Set OTEL_EXPORTER_OTLP_LOGS_ENDPOINT for the logging Collector") {
		t.Errorf("without the logs endpoint: %v", err)
	}
}

// Both of OCE's overlays at once: every stage in Compose's order, the Collector before migrate,
// the metrics server before what sends to it, metrics-worker alone left out.
func TestMetricsAndLoggingOverlaysTogether(t *testing.T) {
	b := newModelBed(t)
	env := map[string]string{}
	maps.Copy(env, metricsEnv)
	maps.Copy(env, loggingEnv)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml"), filepath.Join(b.checkout, "compose.logging.yaml")}, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.StartedServices(), " "); got != "postgres collector migrate bootstrap controller worker-kubernetes prometheus grafana metrics-api" {
		t.Errorf("started in the order %s", got)
	}
	var out []string
	for _, s := range m.Services() {
		if !s.Started {
			out = append(out, s.Name)
		}
	}
	if strings.Join(out, " ") != "metrics-worker worker" {
		t.Errorf("not started: %v", out)
	}
}

// An engineer's overlay makes worker-kubernetes depend on the metrics overlay's worker agent,
// which cannot run here: the profile cannot start without it, so that is refused, naming both,
// and the model comes with the refusal so a dry run can still show the whole plan.
func TestProfileServiceNeedingALeftOutServiceIsRefused(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml"), b.override("needs-agent.yaml", "services:\n  worker-kubernetes:\n    depends_on: [metrics-worker]\n")}, metricsEnv)
	var pe *ProjectError
	if !errors.As(err, &pe) || len(pe.Violations) != 1 || pe.Violations[0].Service != ServiceWorker {
		t.Fatalf("got %v, want one violation of worker-kubernetes", err)
	}
	for _, w := range []string{"service worker-kubernetes: services.worker-kubernetes.depends_on = \"metrics-worker\"", "the profile's worker-kubernetes needs metrics-worker (depends_on), which cannot run in this profile (left out", "drop that dependency"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), metricsEnv["OCC_METRICS_GRAFANA_PASSWORD"]) {
		t.Errorf("the refusal shows the Grafana password:\n%v", err)
	}
	if m == nil || len(m.Plan().Services) != 10 {
		t.Errorf("the refused model: %+v", m)
	}
}

// With the worker agent disabled by a profile in the engineer's own overlay, it is listed as
// disabled rather than left out, and the rest of the metrics stack starts as without it; the
// plan publishes the two loopback ports.
func TestMetricsOverlayServicesStartWithTheProfile(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml"), b.override("no-worker-metrics.yaml", disableMetricsWorker)},
		map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": "x", "OCC_PROMETHEUS_PORT": "19090", "OCC_GRAFANA_PORT": "13001"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Added, " ") != "prometheus grafana metrics-api" {
		t.Fatalf("added %v", m.Added)
	}
	if got := strings.Join(m.StartedServices(), " "); got != "postgres migrate bootstrap controller worker-kubernetes prometheus grafana metrics-api" {
		t.Fatalf("started %s", got)
	}
	p := m.Plan()
	st := statusOf(m.Services())
	for _, n := range []string{"grafana", "metrics-api", "prometheus"} {
		if !st[n].Started || !strings.Contains(st[n].Why, "added by the Compose options after --") {
			t.Errorf("%s: %+v", n, st[n])
		}
	}
	if w := st["metrics-worker"]; w.Started || w.Why != "disabled by Compose profile docker-compute, which occ does not enable" {
		t.Errorf("metrics-worker: %+v", w)
	}
	if w := st[ServiceDockerWorker]; w.Started {
		t.Errorf("worker: %+v", w)
	}
	ports := map[string]string{}
	for _, port := range p.Ports {
		ports[port.Service] = port.Host + " " + port.Target
	}
	if ports["prometheus"] != "127.0.0.1:19090 9090/tcp" || ports["grafana"] != "127.0.0.1:13001 3000/tcp" {
		t.Errorf("published %+v", p.Ports)
	}
	if len(p.Services) != 10 {
		t.Errorf("plan services %+v", p.Services)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A service an overlay adds is held to the rules the profile's own meet: no host network, no
// host namespaces, no privileged mode, no mount of the engine's socket, and loopback-only
// publications like every service.
func TestAddedServicesFollowTheRules(t *testing.T) {
	b := newModelBed(t)
	over := b.override("tools.yaml", strings.Join([]string{
		"services:",
		"  hostnet:",
		"    image: registry.example/tool@sha256:" + strings.Repeat("a", 64),
		"    network_mode: host",
		"  root:",
		"    image: registry.example/tool@sha256:" + strings.Repeat("a", 64),
		"    privileged: true",
		"    pid: host",
		"    volumes: [\"/var/run/docker.sock:/var/run/docker.sock\"]",
		"    networks: [development]",
		"  open:",
		"    image: registry.example/tool@sha256:" + strings.Repeat("a", 64),
		"    ports: [\"0.0.0.0:18080:8080\"]",
		"    networks: [development]",
		""}, "\n"))
	_, err := b.load([]string{over}, nil)
	var pe *ProjectError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{`service hostnet: network_mode = "host"`, `service root: privileged = "true"`, `service root: pid = "host"`,
		`service root: volumes[0] = "/var/run/docker.sock:/var/run/docker.sock"`, `service open: ports[0] = "0.0.0.0:18080:8080"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// An engineer on Podman adds compose.logging.yaml: Podman has neither the fluentd logging driver
// the services would log with nor the Collector's local one, so the overlay is refused before
// anything exists, naming each service and driver; on Docker the same model loads.
func TestLoggingOverlayIsRefusedOnPodman(t *testing.T) {
	b := newModelBed(t)
	_, err := Load(context.Background(), LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, Engine: engine.Podman, EngineSocket: "/run/podman/podman.sock",
		User: UserOptions{Files: []string{filepath.Join(b.checkout, "compose.logging.yaml")}}, Environment: loggingEnv})
	var pe *ProjectError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *ProjectError", err)
	}
	var got []string
	for _, v := range pe.Violations {
		got = append(got, v.Service+" "+v.Value)
	}
	if strings.Join(got, ", ") != "collector local, migrate fluentd, bootstrap fluentd, controller fluentd" {
		t.Errorf("violations %q", got)
	}
	if !strings.Contains(err.Error(), `service migrate: logging.driver = "fluentd": Podman has no fluentd logging driver (it has json-file, k8s-file, journald, none, passthrough); run this overlay on Docker`) {
		t.Errorf("error:\n%v", err)
	}
}

// An engineer with the metrics overlay reloads after editing the controller: the API's metrics
// agent shares the controller's network namespace, so it is recreated with it (after it); the
// Prometheus server and Grafana, which only depend on services, are not; the left-out worker
// agent is never named.
func TestSharersAreRecreatedWithTheirOwner(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, metricsEnv)
	if err != nil {
		t.Fatal(err)
	}
	started := m.StartedServices()
	if got := Sharers(m.Project, started, []string{ServiceController, ServiceWorker}); strings.Join(got, " ") != "controller worker-kubernetes metrics-api" {
		t.Errorf("recreated with the API services: %v", got)
	}
	if got := Sharers(m.Project, started, []string{ServiceWorker}); strings.Join(got, " ") != "worker-kubernetes" {
		t.Errorf("recreated with worker-kubernetes: %v", got)
	}
}

// An engineer's overlay adds a sidecar worker-kubernetes depends on: Compose starts it with the
// API services (their `compose up` names it), before worker-kubernetes, and the plan says so;
// nothing is left for the last stage.
func TestAddedServiceAnAPIServiceNeedsStartsWithIt(t *testing.T) {
	b := newModelBed(t)
	over := b.override("sidecar.yaml", "services:\n  sidecar:\n    image: registry.example/sidecar@sha256:"+strings.Repeat("a", 64)+"\n    networks: [development]\n  worker-kubernetes:\n    depends_on: [sidecar]\n")
	m, err := b.load([]string{over}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.APIStage(), " "); got != "controller sidecar worker-kubernetes" {
		t.Errorf("API stage %s", got)
	}
	if len(m.Added) != 0 || strings.Join(m.DataStage(), " ") != "postgres migrate bootstrap" {
		t.Errorf("data stage %v, added %v", m.DataStage(), m.Added)
	}
	if why := statusOf(m.Services())["sidecar"].Why; why != "added by the Compose options after --; started with the controller and worker-kubernetes, since worker-kubernetes needs it" {
		t.Errorf("sidecar: %s", why)
	}
}
