package compose

import (
	"slices"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// metricsPrefix names the metrics settings of OCE's processes (OCC_METRICS_ENABLED,
// OCC_METRICS_HOST, OCC_METRICS_PORT). OCE's chart gives them to its Kubernetes worker as to its
// API, so worker-kubernetes, this profile's worker, takes them from what the Compose options
// give the Docker Compute worker (compose.metrics.yaml sets them on `worker` only). Nothing else
// of `worker` carries over: the logging overlay's settings for it are Docker Compute's (its
// fluentd address for Agent containers), and OCE's chart runs no collector in development.
const metricsPrefix = "OCC_METRICS_"

// EnvConfigPath is the variable that names the configuration an OCE process reads; in this
// profile it is the Installation occ writes, mounted read-only (compose.kubernetes.yaml).
const EnvConfigPath = "OCC_CONFIG_PATH"

// adoptWorkerAdditions gives worker-kubernetes the metrics settings the Compose options give
// the Docker Compute worker, unless the options set them on worker-kubernetes themselves, and
// says so in its status. checkout is the model of the checkout's own files.
func (m *Model) adoptWorkerAdditions(checkout *types.Project) {
	from, ok := m.Project.Services[ServiceDockerWorker]
	to, ok2 := m.Project.Services[ServiceWorker]
	if !ok || !ok2 {
		return
	}
	was := checkout.Services[ServiceDockerWorker].Environment
	own := checkout.Services[ServiceWorker].Environment
	var given []string
	for k, v := range from.Environment {
		if !strings.HasPrefix(k, metricsPrefix) || sameValue(was[k], v) || !sameValue(own[k], to.Environment[k]) {
			continue
		}
		if to.Environment == nil {
			to.Environment = types.MappingWithEquals{}
		} else if len(given) == 0 {
			to.Environment = cloneMapping(to.Environment)
		}
		to.Environment[k] = v
		given = append(given, k)
	}
	if len(given) == 0 {
		return
	}
	sort.Strings(given)
	m.Project.Services[ServiceWorker] = to
	st := m.status[ServiceWorker]
	st.Why += "; with " + strings.Join(given, ", ") + " as the Compose options give them to worker, as OCE's chart gives its Kubernetes worker the metrics settings of its API"
	m.status[ServiceWorker] = st
}

// keepInstallationConfig keeps the controller's and worker-kubernetes's OCC_CONFIG_PATH at the
// Installation occ writes when the Compose options point it elsewhere (compose.logging.yaml
// points it at its own configuration of the Docker Compute stack): without the Installation the
// API and the worker know no cluster, and the profile is nothing. The plan says so.
func (m *Model) keepInstallationConfig(checkout *types.Project) {
	for _, name := range APIServices {
		svc, ok := m.Project.Services[name]
		want := checkout.Services[name].Environment[EnvConfigPath]
		if !ok || want == nil || sameValue(want, svc.Environment[EnvConfigPath]) {
			continue
		}
		other := "unset"
		if v := svc.Environment[EnvConfigPath]; v != nil {
			other = *v
		}
		svc.Environment = cloneMapping(svc.Environment)
		svc.Environment[EnvConfigPath] = want
		m.Project.Services[name] = svc
		st := m.status[name]
		st.Why += "; " + EnvConfigPath + " stays " + *want + ", the Installation occ writes (the Compose options set " + other + ")"
		m.status[name] = st
	}
}

func sameValue(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func cloneMapping(in types.MappingWithEquals) types.MappingWithEquals {
	out := types.MappingWithEquals{}
	for k, v := range in {
		out[k] = v
	}
	return out
}

// podmanLogDrivers are the logging drivers Podman's Docker-compatible API accepts for a
// container; it refuses any other at container creation ("invalid log driver"). json-file is
// Podman's name for its k8s-file format.
var podmanLogDrivers = []string{"", "json-file", "k8s-file", "journald", "none", "passthrough"}

// checkPodmanLogging refuses, on Podman, a started service whose logging driver Podman does not
// have (compose.logging.yaml's fluentd for the services, local for its Collector): Compose would
// create the project and fail at that service's container, after the cluster exists. A
// left-out service never runs, so its driver does not matter.
func (m *Model) checkPodmanLogging() []Violation {
	if !m.engine.Registration().ComposePodman {
		return nil
	}
	var out []Violation
	for _, name := range m.StartedServices() {
		l := m.Project.Services[name].Logging
		if l == nil || slices.Contains(podmanLogDrivers, l.Driver) {
			continue
		}
		out = append(out, Violation{Service: name, Key: "logging.driver", Value: l.Driver,
			Rule: "Podman has no " + l.Driver + " logging driver (it has " + strings.Join(podmanLogDrivers[1:], ", ") + ")",
			Fix:  "run this overlay on Docker (compose.logging.yaml needs Docker's fluentd driver), or leave it out on Podman"})
	}
	return out
}

// Sharers adds to services every service of started that shares the namespaces of one of them
// (network_mode, pid or ipc `service:…`), or takes its volumes (volumes_from), directly or
// through another such service, in the order of started. A recreated container takes its
// namespaces with it: a service that shares them (compose.metrics.yaml's metrics-api shares the
// controller's network namespace) keeps running in the old ones, cut off, unless it is
// recreated with it; `--no-deps` keeps Compose from doing that by itself.
func Sharers(p *types.Project, started, services []string) []string {
	out := slices.Clone(services)
	for changed := true; changed; {
		changed = false
		for _, name := range started {
			if slices.Contains(out, name) {
				continue
			}
			for _, n := range needs(p.Services[name]) {
				if n.how != "depends_on" && n.how != "links" && slices.Contains(out, n.service) {
					out = append(out, name)
					changed = true
					break
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return slices.Index(started, a) - slices.Index(started, b) })
	return out
}
