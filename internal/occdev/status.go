package occdev

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/state"
)

// StatusOptions are the settings of `occ dev status`.
type StatusOptions struct {
	StateDir string
}

// ObjectStatus compares one recorded object with the cluster.
type ObjectStatus struct {
	Type       state.Type `json:"type"`
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Namespace  string     `json:"namespace,omitempty"`
	Name       string     `json:"name"`
	// State is present, missing, changed (same name, different object) or terminating.
	State string `json:"state"`
	// Detail adds what is known: the Helm release status, or why an object counts as changed.
	Detail string `json:"detail,omitempty"`
}

// Status is the recorded environment against the live cluster.
type Status struct {
	StateDirectory  string         `json:"stateDirectory"`
	Profile         string         `json:"profile"`
	Cluster         state.Cluster  `json:"cluster"`
	Namespace       string         `json:"namespace,omitempty"`
	GatewayEndpoint string         `json:"gatewayEndpoint,omitempty"`
	Installation    string         `json:"installation,omitempty"`
	Reachable       bool           `json:"reachable"`
	Problem         string         `json:"problem,omitempty"`
	Objects         []ObjectStatus `json:"objects"`
}

// GetStatus reads the recorded state (without taking the lock, so it works while `up` runs)
// and reports, for each recorded object, whether it is present, missing or changed.
func GetStatus(ctx context.Context, opts StatusOptions) (*Status, error) {
	dir, err := state.ResolveDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	st, err := state.Read(dir)
	if err != nil {
		return nil, err
	}
	out := &Status{
		StateDirectory: dir, Profile: st.Profile, Cluster: st.Cluster, Namespace: st.PlatformNamespace,
		GatewayEndpoint: st.GatewayEndpoint, Installation: st.InstallationPath, Objects: []ObjectStatus{},
	}
	for _, o := range st.Objects {
		out.Objects = append(out.Objects, ObjectStatus{Type: o.Type, Kind: o.Kind, APIVersion: o.APIVersion, Namespace: o.Namespace, Name: o.Name, State: "unknown"})
	}
	if st.Cluster.Kubeconfig == "" {
		out.Problem = "no cluster recorded yet: occ dev up stopped before connecting to one"
		return out, nil
	}
	conn, err := connect(st.Cluster, ownerID(st), nil)
	if err != nil {
		out.Problem = err.Error()
		return out, nil
	}
	if err := conn.verifyIdentity(ctx); err != nil {
		out.Problem = err.Error()
		return out, nil
	}
	out.Reachable = true
	owner := ownerID(st)
	for i, o := range st.Objects {
		s := &out.Objects[i]
		if o.Type == state.TypeHelmRelease {
			rel, err := releaseStatus(st.Cluster, o.Namespace, o.Name)
			switch {
			case err != nil:
				s.State, s.Detail = "unknown", err.Error()
			case rel == nil:
				s.State = LiveMissing
			case rel.Labels[LabelDevState] != owner:
				s.State, s.Detail = LiveChanged, "the release does not carry this state's label"
			default:
				s.State = LivePresent
				if rel.Info != nil {
					s.Detail = fmt.Sprintf("revision %d, %s", rel.Version, rel.Info.Status)
				}
			}
			continue
		}
		live, u, err := conn.objects.live(ctx, o)
		if err != nil {
			s.State, s.Detail = "unknown", err.Error()
			continue
		}
		s.State = live
		if live == LiveChanged {
			s.Detail = fmt.Sprintf("recorded uid %s, live uid %s", o.UID, u.GetUID())
		}
	}
	return out, nil
}
