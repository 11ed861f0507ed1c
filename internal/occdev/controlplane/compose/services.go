package compose

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// ServiceDockerWorker is compose.yaml's worker of Docker Compute, which the Kubernetes Compute
// profile never starts: its worker is worker-kubernetes.
const ServiceDockerWorker = "worker"

// What an overlay after `--` adds. An OCE engineer who adds `-f compose.metrics.yaml` expects
// the metrics stack to run, so every service the user's files add to the checkout's two files
// is started with the profile's own (after them, in one `compose up`), under the same rules:
// loopback-only publications, Compose-owned volumes and networks, and on top, for these
// services, no host network, no container network outside the project, no privileged mode and
// no bind mount of the engine's socket. An added service that cannot run in this profile (it
// depends on, or shares the namespaces of, a service the profile does not start, such as the
// Docker Compute worker) refuses the whole overlay, naming it: a stack that silently lacks part
// of what was asked for is worse than a refusal with the fix. Disabling such a service with a
// Compose profile in one's own overlay is the explicit way to run the rest.

// ServiceStatus is what `up` does with one service of the merged model, and why.
type ServiceStatus struct {
	Name string `json:"name"`
	// Started says `up` starts it.
	Started bool `json:"started"`
	// Why says why it is started or not.
	Why string `json:"why"`
}

// classifyServices decides, for every service of the merged model and every service disabled
// by a Compose profile, whether `up` starts it; base are the services of the checkout's own
// files. It returns the added services that start, and the violations of those that cannot.
func (m *Model) classifyServices(base map[string]bool) []Violation {
	p := m.Project
	m.status = map[string]ServiceStatus{}
	profile := map[string]string{}
	for _, n := range DataServices {
		profile[n] = "started first: " + map[string]string{ServicePostgres: "the database", ServiceMigrate: "the migration job, which must exit 0", ServiceBootstrap: "the bootstrap job, which must exit 0"}[n]
	}
	profile[ServiceController] = "started once the cluster and the Installation exist: the OCE API"
	profile[ServiceWorker] = "started once the cluster and the Installation exist: the Kubernetes worker"
	for name, why := range profile {
		if _, ok := p.Services[name]; ok {
			m.status[name] = ServiceStatus{Name: name, Started: true, Why: why}
		}
	}
	var added []string
	for _, name := range p.ServiceNames() {
		if _, ok := profile[name]; ok {
			continue
		}
		if !base[name] {
			added = append(added, name)
			continue
		}
		why := "defined by the checkout's compose files for another profile; this profile starts " + strings.Join(RequiredServices, ", ")
		if name == ServiceDockerWorker {
			why = "the Docker Compute worker of compose.yaml; with Kubernetes Compute the worker is worker-kubernetes"
		}
		m.status[name] = ServiceStatus{Name: name, Why: why}
	}
	for name, svc := range p.DisabledServices {
		m.status[name] = ServiceStatus{Name: name, Why: "disabled by Compose profile " + strings.Join(svc.Profiles, ",") + ", which occ does not enable"}
	}

	// An added service runs when everything it needs runs: fixed point over the added ones.
	runs := map[string]bool{}
	for _, n := range RequiredServices {
		runs[n] = true
	}
	blocked := map[string]string{}
	for changed := true; changed; {
		changed = false
		for _, name := range added {
			if runs[name] {
				continue
			}
			var missing []string
			wait := false
			for _, need := range needs(p.Services[name]) {
				switch {
				case runs[need.service]:
				case slices.Contains(added, need.service) && blocked[need.service] == "":
					wait = true
				default:
					text := need.how + " " + need.service + ", which this profile does not start"
					if st, ok := m.status[need.service]; ok {
						text += " (" + st.Why + ")"
					} else if blocked[need.service] != "" {
						text = need.how + " " + need.service + ", which cannot run either"
					}
					if !slices.Contains(missing, text) {
						missing = append(missing, text)
					}
				}
			}
			switch {
			case len(missing) > 0:
				if blocked[name] == "" {
					changed = true
				}
				blocked[name] = strings.Join(missing, ", and ")
			case !wait:
				runs[name] = true
				changed = true
			}
		}
	}
	var out []Violation
	for _, name := range added {
		if runs[name] {
			m.Added = append(m.Added, name)
			m.status[name] = ServiceStatus{Name: name, Started: true, Why: "added by the Compose options after --; started after the controller and worker-kubernetes"}
			out = append(out, checkAdded(name, p.Services[name])...)
			continue
		}
		why := blocked[name]
		if why == "" {
			why = "waits for added services that never start (a dependency cycle)"
		}
		m.status[name] = ServiceStatus{Name: name, Why: "cannot run in this profile: it " + why}
		out = append(out, Violation{Service: name, Key: "services." + name, Value: "added by the Compose options after --",
			Rule: "cannot run in the Kubernetes development profile: it " + why + "; occ starts every service an overlay adds, or none",
			Fix:  fmt.Sprintf("disable it with a Compose profile in an overlay of your own (services: {%s: {profiles: [docker-compute]}}), or drop the overlay", name)})
	}
	return out
}

type need struct{ how, service string }

// needs are the services a service cannot start without: its dependencies and the services
// whose namespaces or volumes it shares.
func needs(svc types.ServiceConfig) []need {
	var out []need
	for _, dep := range sortedKeys(svc.DependsOn) {
		out = append(out, need{"depends on", dep})
	}
	if s, ok := strings.CutPrefix(svc.NetworkMode, types.NetworkModeServicePrefix); ok {
		out = append(out, need{"shares the network namespace (network_mode) of", s})
	}
	for _, v := range svc.VolumesFrom {
		if s, ok := strings.CutPrefix(v, types.ServicePrefix); ok {
			v = s
		}
		if !strings.HasPrefix(v, types.ContainerPrefix) {
			name, _, _ := strings.Cut(v, ":")
			out = append(out, need{"takes the volumes of (volumes_from)", name})
		}
	}
	for _, l := range svc.Links {
		name, _, _ := strings.Cut(l, ":")
		out = append(out, need{"links", name})
	}
	for _, mode := range []string{svc.Pid, svc.Ipc} {
		if s, ok := strings.CutPrefix(mode, types.ServicePrefix); ok {
			out = append(out, need{"shares the namespaces of", s})
		}
	}
	return out
}

// checkAdded applies the rules the profile's own services meet by construction to a service an
// overlay adds: nothing that reaches past the project's network and the engine's isolation.
func checkAdded(name string, svc types.ServiceConfig) []Violation {
	var out []Violation
	mode := svc.NetworkMode
	switch {
	case mode == "", mode == "none", strings.HasPrefix(mode, types.NetworkModeServicePrefix):
	default:
		out = append(out, Violation{Service: name, Key: "network_mode", Value: mode,
			Rule: "a service the Compose options add must use the project's networks (or share a started service's namespace): " + mode + " reaches past them, and past the loopback rule for publications",
			Fix:  "remove network_mode, or use service:<a started service>"})
	}
	for _, m := range []struct{ key, value string }{{"pid", svc.Pid}, {"ipc", svc.Ipc}} {
		if m.value == "host" {
			out = append(out, Violation{Service: name, Key: m.key, Value: m.value,
				Rule: "a service the Compose options add must not share the host's namespaces", Fix: "remove " + m.key})
		}
	}
	if svc.Privileged {
		out = append(out, Violation{Service: name, Key: "privileged", Value: "true",
			Rule: "a service the Compose options add must not run privileged", Fix: "remove privileged"})
	}
	for i, v := range svc.Volumes {
		if v.Type == types.VolumeTypeBind && isEngineSocket(v.Source) {
			out = append(out, Violation{Service: name, Key: fmt.Sprintf("volumes[%d]", i), Value: v.Source + ":" + v.Target,
				Rule: "a service the Compose options add must not mount the engine's socket (Docker's or Podman's: it would control the whole engine)", Fix: "remove the mount"})
		}
	}
	return out
}

func isEngineSocket(p string) bool {
	base := filepath.Base(p)
	return base == "docker.sock" || base == "podman.sock" || strings.HasSuffix(p, "/run/docker.sock")
}

// Services lists every service of the merged model and every disabled one, with what `up`
// does with it: the profile's own in start order, then the added ones, then those not
// started, by name.
func (m *Model) Services() []ServiceStatus {
	var out []ServiceStatus
	for _, name := range m.StartedServices() {
		out = append(out, m.status[name])
	}
	var rest []string
	for name, st := range m.status {
		if !st.Started {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, m.status[name])
	}
	return out
}

// StartedServices are the services `up` starts, in start order.
func (m *Model) StartedServices() []string {
	var out []string
	for _, name := range append(append(append([]string{}, DataServices...), APIServices...), m.Added...) {
		if _, ok := m.Project.Services[name]; ok {
			out = append(out, name)
		}
	}
	return out
}
