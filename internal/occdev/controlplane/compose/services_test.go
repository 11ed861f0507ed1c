package compose

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// metricsEnv is what an engineer sets for the metrics overlay: its Grafana password (the
// overlay's `:?` refuses to render without one).
var metricsEnv = map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": "grafana-canary-password"}

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
// never starts, so the overlay is refused before anything runs, naming that service, why, and
// the explicit way out; nothing of it runs partially.
func TestMetricsOverlayThatCannotRunWholeIsRefused(t *testing.T) {
	b := newModelBed(t)
	_, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, metricsEnv)
	var pe *ProjectError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *ProjectError", err)
	}
	if len(pe.Violations) != 1 || pe.Violations[0].Service != "metrics-worker" {
		t.Fatalf("violations %+v", pe.Violations)
	}
	for _, w := range []string{"service metrics-worker", "it depends on worker, which this profile does not start (the Docker Compute worker of compose.yaml", "and shares the network namespace (network_mode) of worker",
		"the Docker Compute worker of compose.yaml", "occ starts every service an overlay adds, or none", "profiles: [docker-compute]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), metricsEnv["OCC_METRICS_GRAFANA_PASSWORD"]) {
		t.Errorf("the refusal shows the Grafana password:\n%v", err)
	}
	// The overlay's own required variable is Compose's to refuse, with its message.
	if _, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "Choose a development Grafana password") {
		t.Errorf("without the Grafana password: %v", err)
	}
}

// With the worker agent disabled by a profile in the engineer's own overlay, the rest of the
// metrics stack is started: the plan lists every service of the merged model as started (the
// profile's five, then prometheus, grafana and the API's agent) or not (the Docker Compute
// worker, the disabled agent), with why, and publishes the two loopback ports.
func TestMetricsOverlayServicesStartWithTheProfile(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml"), b.override("no-worker-metrics.yaml", disableMetricsWorker)},
		map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": "x", "OCC_PROMETHEUS_PORT": "19090", "OCC_GRAFANA_PORT": "13001"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Added, " ") != "grafana metrics-api prometheus" {
		t.Fatalf("added %v", m.Added)
	}
	if got := strings.Join(m.StartedServices(), " "); got != "postgres migrate bootstrap controller worker-kubernetes grafana metrics-api prometheus" {
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
