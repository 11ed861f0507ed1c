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
// is started, under the profile's rules: loopback-only publications, Compose-owned volumes and
// networks, and on top, for these services, no host network, no container network outside the
// project, no privileged mode and no bind mount of the engine's socket. OCE's own overlays are
// written for its Docker Compute stack, so some of what they add needs a service this profile
// never starts (compose.metrics.yaml's metrics-worker shares the Docker Compute worker's network
// namespace). Such a service is left out, with the reason in the plan and the summary, and the
// rest runs: the engineer gets the metrics of the API rather than none. Leaving it out is real
// because occ names the services of every `compose up` it runs and never names a left-out one,
// and nothing started depends on one (a profile service that does is refused).
//
// Compose starts a service's dependencies with it, so the services are started in three stages,
// each one `compose up` of the services named: the data services with every added service they
// need (compose.logging.yaml's collector starts before migrate, which depends on it), the API
// services with what they need that is not running yet, then the rest of the added services.
// Within a stage Compose starts a service after everything it depends on, which is the order the
// plan lists.

// ServiceStatus is what `up` does with one service of the merged model, and why.
type ServiceStatus struct {
	Name string `json:"name"`
	// Started says `up` starts it.
	Started bool `json:"started"`
	// Why says why it is started or not.
	Why string `json:"why"`
	// LeftOut says the Compose options add it and it cannot run in this profile (it needs a
	// service the profile never starts); Why names that service.
	LeftOut bool `json:"leftOut,omitempty"`
}

// The stages of `up` that start services, in the order they run.
const (
	stageData = iota
	stageAPI
	stageAdded
)

// profileOrder is the order of the profile's own services, which breaks ties of the start order
// before names do.
var profileOrder = append(append([]string{}, DataServices...), APIServices...)

// classifyServices decides, for every service of the merged model and every service disabled
// by a Compose profile, whether `up` starts it, and in which stage; checkout is the model of the
// checkout's own files. It returns the violations: an added service that breaks the rules for
// added services, and a profile service that needs an added service that cannot run.
func (m *Model) classifyServices(checkout *types.Project) []Violation {
	m.status = map[string]ServiceStatus{}
	m.stages = [3][]string{}
	m.Added = nil
	added := m.classifyOwn(checkout)
	a := m.settleAdded(added)
	started, out := m.leaveOut(a)
	out = append(out, m.profileNeedsLeftOut(a)...)
	m.stageServices(started)
	return out
}

// profileReasons are the profile's own services, each with why `up` starts it.
func profileReasons() map[string]string {
	profile := map[string]string{}
	for _, n := range DataServices {
		profile[n] = "started first: " + map[string]string{ServicePostgres: "the database", ServiceMigrate: "the migration job, which must exit 0", ServiceBootstrap: "the bootstrap job, which must exit 0"}[n]
	}
	profile[ServiceController] = "started once the cluster and the Installation exist: the OCE API"
	profile[ServiceWorker] = "started once the cluster and the Installation exist: the Kubernetes worker"
	return profile
}

// classifyOwn gives the status of every service that is not added: the profile's own are
// started, the checkout's others and the disabled ones are not. It returns the services the
// Compose options add to the checkout's files, in the model's order.
func (m *Model) classifyOwn(checkout *types.Project) (added []string) {
	p := m.Project
	base := map[string]bool{}
	for _, n := range checkout.ServiceNames() {
		base[n] = true
	}
	for n := range checkout.DisabledServices {
		base[n] = true
	}
	profile := profileReasons()
	for name, why := range profile {
		if _, ok := p.Services[name]; ok {
			m.status[name] = ServiceStatus{Name: name, Started: true, Why: why}
		}
	}
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
	return added
}

// addedServices are the services the Compose options add, and which of them can run.
type addedServices struct {
	m     *Model
	names []string
	// runs holds the services that run: the profile's and the added ones that can.
	runs map[string]bool
	// blocked says why an added service cannot run, by name.
	blocked map[string]string
}

// settleAdded works out which added services run: one runs when everything it needs runs, so
// it is a fixed point over the added ones, from the profile's services up.
func (m *Model) settleAdded(added []string) *addedServices {
	a := &addedServices{m: m, names: added, runs: map[string]bool{}, blocked: map[string]string{}}
	for _, n := range RequiredServices {
		a.runs[n] = true
	}
	for changed := true; changed; {
		changed = false
		for _, name := range added {
			if !a.runs[name] && a.settle(name) {
				changed = true
			}
		}
	}
	return a
}

// settle decides, as far as is known yet, whether the added service name runs or is blocked,
// and reports whether that decision is new.
func (a *addedServices) settle(name string) bool {
	missing, hows, wait := a.unmet(name)
	switch {
	case len(missing) > 0:
		changed := a.blocked[name] == ""
		a.blocked[name] = a.blockers(missing, hows)
		return changed
	case !wait:
		a.runs[name] = true
		return true
	}
	return false
}

// unmet are the services name needs that do not run and never will (missing, each with the
// keys that need it), and whether it also waits for added services not settled yet.
func (a *addedServices) unmet(name string) (missing []string, hows map[string][]string, wait bool) {
	hows = map[string][]string{}
	for _, need := range needs(a.m.Project.Services[name]) {
		switch {
		case a.runs[need.service]:
		case slices.Contains(a.names, need.service) && a.blocked[need.service] == "":
			wait = true
		default:
			if !slices.Contains(missing, need.service) {
				missing = append(missing, need.service)
			}
			hows[need.service] = append(hows[need.service], need.how)
		}
	}
	return missing, hows, wait
}

// blockers says why the missing services never run: not started by the profile (and why), or
// added and blocked themselves.
func (a *addedServices) blockers(missing []string, hows map[string][]string) string {
	var texts []string
	for _, svc := range missing {
		text := "needs " + svc + " (" + strings.Join(hows[svc], ", ") + "), which this profile does not start"
		if st, ok := a.m.status[svc]; ok {
			text += " (" + st.Why + ")"
		} else if a.blocked[svc] != "" {
			text = "needs " + svc + " (" + strings.Join(hows[svc], ", ") + "), which cannot run either"
		}
		texts = append(texts, text)
	}
	return strings.Join(texts, ", and ")
}

// leaveOut gives every added service that cannot run its left-out status, and checks the rules
// for added services on the others. It returns those that start, in the model's order.
func (m *Model) leaveOut(a *addedServices) (started []string, out []Violation) {
	for _, name := range a.names {
		if a.runs[name] {
			started = append(started, name)
			out = append(out, checkAdded(name, m.Project.Services[name])...)
			continue
		}
		why := a.blocked[name]
		if why == "" {
			why = "waits for added services that never start (a dependency cycle)"
		}
		m.status[name] = ServiceStatus{Name: name, Why: "left out, as it cannot run in this profile: it " + why, LeftOut: true}
	}
	return started, out
}

// profileNeedsLeftOut refuses a profile service that needs a left-out service: it cannot start
// either, and that is the one overlay occ refuses, since the profile is nothing without its own
// services.
func (m *Model) profileNeedsLeftOut(a *addedServices) []Violation {
	var out []Violation
	for _, name := range profileOrder {
		svc, ok := m.Project.Services[name]
		if !ok {
			continue
		}
		for _, need := range needs(svc) {
			if slices.Contains(a.names, need.service) && !a.runs[need.service] {
				out = append(out, Violation{Service: name, Key: "services." + name + "." + need.how, Value: need.service,
					Rule: "the profile's " + name + " needs " + need.service + " (" + need.how + "), which cannot run in this profile (" + m.status[need.service].Why + ")",
					Fix:  "drop that dependency from the Compose options after --, or the overlay that adds it"})
			}
		}
	}
	return out
}

// stageServices puts every started service in the stage that starts it, each stage in the order
// Compose starts it: the data services with every added service they need (directly or not),
// the API services with what they need that is not started yet, then the other added services.
func (m *Model) stageServices(added []string) {
	p := m.Project
	stageOf := map[string]int{}
	var pull func(name string, stage int)
	pull = func(name string, stage int) {
		if _, done := stageOf[name]; done {
			return
		}
		stageOf[name] = stage
		for _, need := range needs(p.Services[name]) {
			if slices.Contains(added, need.service) {
				pull(need.service, stage)
			}
		}
	}
	for _, n := range DataServices {
		if _, ok := p.Services[n]; ok {
			pull(n, stageData)
		}
	}
	for _, n := range APIServices {
		if _, ok := p.Services[n]; ok {
			pull(n, stageAPI)
		}
	}
	for _, n := range added {
		pull(n, stageAdded)
	}
	for stage := range m.stages {
		var names []string
		for n, s := range stageOf {
			if s == stage {
				names = append(names, n)
			}
		}
		m.stages[stage] = startOrder(p, names)
	}
	for stage, names := range m.stages {
		for _, n := range names {
			if !slices.Contains(added, n) {
				continue
			}
			why := "added by the Compose options after --; started after the controller and worker-kubernetes"
			switch stage {
			case stageData:
				why = "added by the Compose options after --; started with the data services, since " + needing(dependents(p, names, n)) + " it"
			case stageAPI:
				why = "added by the Compose options after --; started with the controller and worker-kubernetes, since " + needing(dependents(p, names, n)) + " it"
			default:
				m.Added = append(m.Added, n)
			}
			m.status[n] = ServiceStatus{Name: n, Started: true, Why: why}
		}
	}
}

// needing is "a needs" or "a and b need".
func needing(services []string) string {
	if len(services) == 1 {
		return services[0] + " needs"
	}
	return strings.Join(services, " and ") + " need"
}

// dependents are the services of names that need service directly.
func dependents(p *types.Project, names []string, service string) []string {
	var out []string
	for _, n := range names {
		for _, need := range needs(p.Services[n]) {
			if need.service == service && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// startOrder orders names as one `compose up` of them starts them: a service after everything of
// names it needs; services that start side by side in the profile's order, then by name.
func startOrder(p *types.Project, names []string) []string {
	depth := map[string]int{}
	var depthOf func(name string, seen map[string]bool) int
	depthOf = func(name string, seen map[string]bool) int {
		if d, ok := depth[name]; ok {
			return d
		}
		if seen[name] {
			return 0
		}
		seen[name] = true
		d := 0
		for _, need := range needs(p.Services[name]) {
			if slices.Contains(names, need.service) {
				d = max(d, depthOf(need.service, seen)+1)
			}
		}
		depth[name] = d
		return d
	}
	for _, n := range names {
		depthOf(n, map[string]bool{})
	}
	rank := func(n string) int {
		if i := slices.Index(profileOrder, n); i >= 0 {
			return i
		}
		return len(profileOrder)
	}
	out := slices.Clone(names)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if depth[a] != depth[b] {
			return depth[a] < depth[b]
		}
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a < b
	})
	return out
}

// need is a service another cannot start without, and the key that says so (depends_on,
// network_mode, volumes_from, links, pid, ipc).
type need struct{ how, service string }

// needs are the services a service cannot start without: its dependencies and the services
// whose namespaces or volumes it shares.
func needs(svc types.ServiceConfig) []need {
	var out []need
	for _, dep := range sortedKeys(svc.DependsOn) {
		out = append(out, need{"depends_on", dep})
	}
	if s, ok := strings.CutPrefix(svc.NetworkMode, types.NetworkModeServicePrefix); ok {
		out = append(out, need{"network_mode", s})
	}
	for _, v := range svc.VolumesFrom {
		if s, ok := strings.CutPrefix(v, types.ServicePrefix); ok {
			v = s
		}
		if !strings.HasPrefix(v, types.ContainerPrefix) {
			name, _, _ := strings.Cut(v, ":")
			out = append(out, need{"volumes_from", name})
		}
	}
	for _, l := range svc.Links {
		name, _, _ := strings.Cut(l, ":")
		out = append(out, need{"links", name})
	}
	for _, mode := range []struct{ key, value string }{{"pid", svc.Pid}, {"ipc", svc.Ipc}} {
		if s, ok := strings.CutPrefix(mode.value, types.ServicePrefix); ok {
			out = append(out, need{mode.key, s})
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
// does with it: the started ones in start order, then those not started, by name.
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

// StartedServices are the services `up` starts, in the order Compose starts them.
func (m *Model) StartedServices() []string {
	var out []string
	for _, names := range m.stages {
		out = append(out, names...)
	}
	return out
}

// DataStage are the services the first `compose up` names, in start order: postgres, migrate,
// bootstrap and every added service they need.
func (m *Model) DataStage() []string { return slices.Clone(m.stages[stageData]) }

// APIStage are the services the `compose up --no-deps` after the cluster names, in start order:
// controller, worker-kubernetes and the added services they need that the data stage did not
// start.
func (m *Model) APIStage() []string { return slices.Clone(m.stages[stageAPI]) }
