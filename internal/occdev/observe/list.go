package observe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// listTimeout bounds `occ dev list` when no other bound is given: an environment whose engine
// or cluster does not answer by then is listed with its health unknown, never waited for.
const listTimeout = 20 * time.Second

// Environment is one environment as `occ dev list` shows it: what `occ dev status` reads of it,
// summed up.
type Environment struct {
	Name           string `json:"name"`
	StateDirectory string `json:"stateDirectory"`
	Profile        string `json:"profile,omitempty"`
	// Engine is the recorded container engine's kind (docker or podman) and EngineEndpoint its
	// socket.
	Engine         engine.Kind `json:"engine,omitempty"`
	EngineEndpoint string      `json:"engineEndpoint,omitempty"`
	// Cluster is the recorded cluster's name and ClusterProvider where it came from.
	Cluster         string `json:"cluster,omitempty"`
	ClusterProvider string `json:"clusterProvider,omitempty"`
	// APIURL is where the OCE API answers; empty when no control plane was started.
	APIURL string `json:"apiURL,omitempty"`
	// Health is healthy, degraded or unknown, and Problem says why it is not healthy.
	Health  string `json:"health"`
	Problem string `json:"problem,omitempty"`
}

// The health of a listed environment.
const (
	// HealthHealthy: the cluster answers as the recorded one, every recorded object is present
	// and the OCE API, when one was started, answers.
	HealthHealthy = "healthy"
	// HealthDegraded: something recorded is missing, changed or not ready.
	HealthDegraded = "degraded"
	// HealthUnknown: occ could not look (the engine or the cluster did not answer in time, or
	// the record could not be read).
	HealthUnknown = "unknown"
)

// List finds every environment in the places --name maps to and reads the status of all of
// them at once (GetStatus, with parts), bounded by timeout (0 is listTimeout). An environment
// under a --state-dir of its own is not found: nothing names it.
func List(ctx context.Context, timeout time.Duration, parts Parts) ([]Environment, error) {
	found, err := state.Environments()
	if err != nil {
		return nil, err
	}
	if timeout == 0 {
		timeout = listTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]Environment, len(found))
	var wg sync.WaitGroup
	for i, f := range found {
		wg.Go(func() { out[i] = listed(ctx, f, parts) })
	}
	wg.Wait()
	return out, nil
}

// listed is one environment's line: its status, summed up.
func listed(ctx context.Context, f state.Found, parts Parts) Environment {
	e := Environment{Name: f.Name, StateDirectory: f.Dir}
	st, err := GetStatus(ctx, f.Dir, "", parts)
	if err != nil {
		e.Health, e.Problem = HealthUnknown, err.Error()
		return e
	}
	if !st.Recorded {
		e.Health, e.Problem = HealthUnknown, st.Note
		return e
	}
	e.Profile, e.Engine, e.EngineEndpoint = st.Profile, st.EngineKind, st.Engine
	if st.Cluster != nil {
		e.Cluster, e.ClusterProvider = st.Cluster.Name, st.Cluster.Provider
	}
	if cp := st.ControlPlane; cp != nil {
		e.APIURL = cp.APIURL
	}
	e.Health, e.Problem = health(st)
	return e
}

// health sums a status up: the first thing that is not as recorded says why.
func health(st *Status) (string, string) {
	if st.Unknown() > 0 || !st.Reachable {
		return HealthUnknown, firstNonEmpty(st.Problem, fmt.Sprintf("the state of %d recorded object(s) is unknown", st.Unknown()))
	}
	if st.ClusterState != "" && st.ClusterState != ClusterExists {
		return HealthDegraded, "the " + st.Cluster.Provider + " cluster is " + st.ClusterState
	}
	if why := st.Facts.Degraded(); why != "" {
		return HealthDegraded, why
	}
	for _, o := range st.Objects {
		if o.State != state.Present {
			return HealthDegraded, fmt.Sprintf("%s %s is %s", firstNonEmpty(o.Kind, string(o.Type)), o.Name, o.State)
		}
	}
	for _, w := range st.Workloads {
		if !workloadHealthy(w.State) {
			return HealthDegraded, w.Service + " is " + w.State
		}
	}
	if cp := st.ControlPlane; cp != nil && cp.API != "" && cp.API != "ready" {
		return HealthDegraded, "the OCE API is " + cp.API
	}
	return HealthHealthy, ""
}

// workloadHealthy reads a workload's state ("1/1 ready", "complete", "0/1 ready", "failed",
// "missing", "unknown: …"): all replicas ready, or a job complete.
func workloadHealthy(s string) bool {
	if s == "complete" {
		return true
	}
	counts, ok := strings.CutSuffix(s, " ready")
	ready, want, ok2 := strings.Cut(counts, "/")
	return ok && ok2 && ready == want && ready != "0"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
