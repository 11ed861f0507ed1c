package observe

import (
	"context"
	"errors"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Parts are what only the registered parts of occ (the cluster providers, the control-plane
// profiles) can say about a recorded environment; the flow hands them in. A nil part answers
// nothing.
type Parts struct {
	// ClusterRecordType is the type of the record the provider keeps of a cluster it created;
	// empty for a provider that keeps none (or a name this occ does not know).
	ClusterRecordType func(provider string) state.Type
	// ControlPlane is the recorded control plane's status section as its profile reads it; nil
	// when `up` started none.
	ControlPlane func(ctx context.Context, st state.State, rec *recorded.Env) *profile.Status
}

// ObjectStatus compares one recorded object with what exists now.
type ObjectStatus struct {
	Type       state.Type `json:"type"`
	Kind       string     `json:"kind,omitempty"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Namespace  string     `json:"namespace,omitempty"`
	Name       string     `json:"name"`
	Digest     string     `json:"digest,omitempty"`
	// State is present, missing, changed (same name, different object), terminating, or
	// unknown (occ could not look; Detail says why).
	State state.Liveness `json:"state"`
	// Detail adds what is known: the Helm release status, why an object counts as changed, or
	// why its state is unknown.
	Detail string `json:"detail,omitempty"`
}

// Status is the recorded environment against the live cluster (`occ dev status`).
type Status struct {
	StateDirectory string `json:"stateDirectory"`
	// Environment is the recorded environment's name (--name).
	Environment string `json:"environment,omitempty"`
	// Recorded is false when there is no state directory: nothing is up (Note says so).
	Recorded        bool           `json:"recorded"`
	Note            string         `json:"note,omitempty"`
	Profile         string         `json:"profile,omitempty"`
	Cluster         *state.Cluster `json:"cluster,omitempty"`
	Namespace       string         `json:"namespace,omitempty"`
	GatewayEndpoint string         `json:"gatewayEndpoint,omitempty"`
	Installation    string         `json:"installation,omitempty"`
	// Engine is the recorded engine endpoint, when the state has one, and EngineKind its kind
	// (docker or podman).
	Engine     string      `json:"engine,omitempty"`
	EngineKind engine.Kind `json:"engineKind,omitempty"`
	// Selections are the local charts, Agent Sandbox manifest and node DNS resolver `up` was
	// told to use, when any.
	Selections *state.Selections `json:"selections,omitempty"`
	// ClusterState is, for a cluster occ created (k3d), whether it exists and is the recorded
	// one: exists, missing, not ours (the name belongs to another cluster now) or unknown (with
	// the cause in ClusterDetail). Empty for a cluster occ only used.
	ClusterState  string `json:"clusterState,omitempty"`
	ClusterDetail string `json:"clusterDetail,omitempty"`
	// Facts are what the cluster says of itself when it is reachable (its nodes), typed and
	// printed by package cluster; their JSON fields sit beside these.
	cluster.Facts
	// Images are the images imported into the cluster, compared with what the node holds.
	Images []ImageStatus `json:"images"`
	// Reachable says whether the recorded cluster answered as the recorded cluster; Problem
	// says why not.
	Reachable bool           `json:"reachable"`
	Problem   string         `json:"problem,omitempty"`
	Objects   []ObjectStatus `json:"objects"`
	// ControlPlane is the recorded control plane as its profile reports it (Parts.ControlPlane):
	// for OCE its checkout, images, Compose services and whether its API answers. Nil when `up`
	// started none.
	ControlPlane *profile.Status `json:"controlPlane,omitempty"`
	// Workloads are the Kubernetes services (the Gateway, the Agent Sandbox controller, the
	// in-cluster control plane): with the Compose services, the names `occ dev logs` takes.
	// WorkloadsProblem says why the list is incomplete, when it is.
	Workloads        []WorkloadStatus `json:"workloads"`
	WorkloadsProblem string           `json:"workloadsProblem,omitempty"`
}

// ImageStatus is one image imported into the cluster: whether the node still holds it under its
// pinned digest reference with the config digest recorded at import.
type ImageStatus struct {
	Reference string `json:"reference"`
	// State is "digest matches", "digest differs", "missing" or "unknown".
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// The cluster states `occ dev status` reports for a cluster occ created.
const (
	ClusterExists  = "exists"
	ClusterMissing = "missing"
	ClusterNotOurs = "not ours"
	ClusterUnknown = "unknown"
)

// The image states.
const (
	ImageDigestMatches = "digest matches"
	ImageDigestDiffers = "digest differs"
	ImageMissing       = "missing"
	ImageUnknown       = "unknown"
)

// Unknown counts the objects whose state could not be found out.
func (s *Status) Unknown() int {
	n := 0
	for _, o := range s.Objects {
		if o.State == state.Unknown {
			n++
		}
	}
	return n
}

// GetStatus reads the recorded state of the environment stateDir and environment select, as
// for up (without taking the lock, so it works while `up` runs), and reports, for each
// recorded object, whether it is present, missing or changed, through the same removers `down`
// uses. What cannot be checked (an unreachable cluster) is unknown, with the cause, never
// missing.
func GetStatus(ctx context.Context, stateDir, environment string, parts Parts) (*Status, error) {
	loc, err := state.Locate(stateDir, environment)
	if err != nil {
		return nil, err
	}
	dir := loc.Dir
	st, err := loc.Read()
	if errors.Is(err, state.ErrNotExist) {
		return &Status{StateDirectory: dir, Note: "no development state at " + dir + ": nothing is up (occ dev up creates it)", Objects: []ObjectStatus{}, Images: []ImageStatus{}, Workloads: []WorkloadStatus{}}, nil
	}
	if err != nil {
		return nil, err
	}
	cl := st.Cluster
	out := &Status{
		StateDirectory: dir, Environment: st.EnvironmentName(), Recorded: true, Profile: st.Profile, Cluster: &cl, Namespace: st.PlatformNamespace,
		GatewayEndpoint: st.GatewayEndpoint, Installation: st.InstallationPath, Objects: []ObjectStatus{}, Images: []ImageStatus{},
		Selections: st.Selections, Workloads: []WorkloadStatus{},
	}
	if st.Engine != nil {
		out.Engine, out.EngineKind = st.Engine.Endpoint, st.Engine.KindOrDocker()
	}
	rec := recorded.Connect(st)
	defer rec.Close()
	if err := rec.SameEngine(ctx, dir); err != nil {
		return nil, err
	}
	if st.Cluster.Kubeconfig == "" {
		out.Problem = "no cluster recorded yet: occ dev up stopped before connecting to one"
	} else if conn, err := rec.Kube(ctx); err != nil {
		out.Problem = err.Error()
	} else {
		out.Reachable = true
		out.Facts = cluster.ReadFacts(ctx, conn.Kube)
	}
	if parts.ControlPlane != nil {
		out.ControlPlane = parts.ControlPlane(ctx, st, rec)
	}
	if out.Reachable {
		out.Workloads, out.WorkloadsProblem = WorkloadStatuses(ctx, st, rec)
	}
	reg := rec.Removers()
	var clusterType state.Type
	if parts.ClusterRecordType != nil {
		clusterType = parts.ClusterRecordType(st.Cluster.Provider)
	}
	for _, o := range st.Objects {
		in := reg.Inspect(ctx, o)
		out.Objects = append(out.Objects, ObjectStatus{
			Type: o.Type, Kind: o.Kind, APIVersion: o.APIVersion, Namespace: o.Namespace, Name: o.Name, Digest: o.Digest,
			State: in.State, Detail: in.Detail,
		})
		switch o.Type {
		case clusterType:
			out.ClusterState, out.ClusterDetail = clusterState(in), in.Detail
		case images.TypeClusterImage:
			out.Images = append(out.Images, ImageStatus{Reference: o.Name + "@" + o.Digest, State: imageState(in), Detail: in.Detail})
		}
	}
	wentWithCluster(st, clusterType, out)
	return out, nil
}

// wentWithCluster marks the records inside a cluster occ created as missing once that cluster is
// missing: they went with it (as down says when it removes them), which no API can be asked
// about any more.
func wentWithCluster(st state.State, clusterType state.Type, out *Status) {
	if clusterType == "" || out.ClusterState != ClusterMissing {
		return
	}
	if !out.Reachable {
		// Not a cluster to start again or a kubeconfig to fix: it is gone.
		out.Problem = "the " + st.Cluster.Provider + " cluster " + st.Cluster.Name + " no longer exists; occ dev down forgets what went with it"
	}
	for i, o := range st.Objects {
		if state.OrderOf(o.Type) != state.InsideCluster || out.Objects[i].State != state.Unknown {
			continue
		}
		out.Objects[i].State, out.Objects[i].Detail = state.Missing, "went with the "+st.Cluster.Provider+" cluster "+st.Cluster.Name+", which no longer exists"
	}
}

func clusterState(in state.Inspection) string {
	switch in.State {
	case state.Present:
		return ClusterExists
	case state.Missing:
		return ClusterMissing
	case state.Changed:
		return ClusterNotOurs
	}
	return ClusterUnknown
}

func imageState(in state.Inspection) string {
	switch in.State {
	case state.Present:
		return ImageDigestMatches
	case state.Changed:
		return ImageDigestDiffers
	case state.Missing:
		return ImageMissing
	}
	return ImageUnknown
}
