package observe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/podlogs"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Service is one service of a recorded environment: a Compose service of the recorded project,
// or a Kubernetes workload the state records or one of its recorded Helm releases holds (the
// Gateway, the Agent Sandbox controller, the in-cluster control plane). `occ dev status` lists
// them and `occ dev logs` reads them by these names.
type Service struct {
	Name string
	// Project is the Compose project of a Compose service.
	Project string
	// Workload is the Kubernetes workload of any other service.
	Workload *podlogs.Workload
}

// Services lists the recorded environment's services: the Compose services first (the ones
// `up` starts, in the order it starts them), then the workloads in the order they were
// recorded, a Helm release's in the order of its manifest (hooks last). A workload whose name
// is taken already is named kind/name. What only the cluster can say (the workloads of a Helm
// release) is missing from the list when the cluster cannot be asked, and the error says why.
func Services(ctx context.Context, st state.State, rec *recorded.Env) ([]Service, error) {
	var out []Service
	taken := map[string]bool{}
	add := func(s Service) {
		if taken[s.Name] && s.Workload != nil {
			s.Name = strings.ToLower(s.Workload.Kind) + "/" + s.Workload.Name
		}
		if !taken[s.Name] {
			taken[s.Name] = true
			out = append(out, s)
		}
	}
	if cp := st.ControlPlane; cp != nil && cp.Compose != nil {
		for _, svc := range compose.RequiredServices {
			add(Service{Name: svc, Project: cp.Compose.Project})
		}
	}
	var errs []error
	for _, o := range st.Objects {
		switch {
		case o.Type == kubeobj.TypeObject && podlogs.Kinds[o.Kind] == o.APIVersion:
			add(Service{Name: o.Name, Workload: &podlogs.Workload{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}})
		case o.Type == helmrelease.TypeRelease:
			ws, err := releaseWorkloads(ctx, st, rec, o)
			if err != nil {
				errs = append(errs, err)
			}
			for _, w := range ws {
				add(Service{Name: w.Name, Workload: &w})
			}
		}
	}
	return out, errors.Join(errs...)
}

// releaseWorkloads reads the workloads a recorded Helm release installed, its hooks included
// (the OCE chart runs migration and bootstrap as a hook Job), from the release itself.
func releaseWorkloads(ctx context.Context, st state.State, rec *recorded.Env, o state.Object) ([]podlogs.Workload, error) {
	if _, err := rec.Kube(ctx); err != nil {
		return nil, fmt.Errorf("the workloads of Helm release %s/%s are unknown: %w", o.Namespace, o.Name, err)
	}
	rel, err := helmrelease.Status(helmrelease.Release{Access: st.Cluster, Namespace: o.Namespace, Name: o.Name})
	if err != nil {
		return nil, fmt.Errorf("the workloads of Helm release %s/%s are unknown: %w", o.Namespace, o.Name, err)
	}
	if rel == nil {
		return nil, nil
	}
	manifests := releaseutil.SplitManifests(rel.Manifest)
	keys := slices.Collect(maps.Keys(manifests))
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var docs []string
	for _, key := range keys {
		docs = append(docs, manifests[key])
	}
	for _, h := range rel.Hooks {
		docs = append(docs, h.Manifest)
	}
	var out []podlogs.Workload
	for _, doc := range docs {
		var head struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &head) != nil || podlogs.Kinds[head.Kind] != head.APIVersion || head.Metadata.Name == "" {
			continue
		}
		ns := head.Metadata.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		out = append(out, podlogs.Workload{Kind: head.Kind, Namespace: ns, Name: head.Metadata.Name})
	}
	return out, nil
}

// WorkloadStatus is one Kubernetes service as `occ dev status` shows it.
type WorkloadStatus struct {
	Service   string `json:"service"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is "1/1 ready", "complete", "failed", "2 active", "missing", or "unknown: <why>".
	State string `json:"state"`
}

// WorkloadStatuses reads the state of every workload service; problem says why the list is
// incomplete, when it is.
func WorkloadStatuses(ctx context.Context, st state.State, rec *recorded.Env) ([]WorkloadStatus, string) {
	svcs, err := Services(ctx, st, rec)
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	out := []WorkloadStatus{}
	var kc kubernetes.Interface
	for _, s := range svcs {
		if s.Workload == nil {
			continue
		}
		w := *s.Workload
		ws := WorkloadStatus{Service: s.Name, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
		if kc == nil {
			conn, err := rec.Kube(ctx)
			if err != nil {
				return out, err.Error()
			}
			kc = conn.Kube
		}
		ws.State = workloadState(ctx, kc, w)
		out = append(out, ws)
	}
	return out, problem
}

func workloadState(ctx context.Context, kc kubernetes.Interface, w podlogs.Workload) string {
	get := metav1.GetOptions{}
	ready := func(ready, want int32) string { return fmt.Sprintf("%d/%d ready", ready, want) }
	var state string
	var err error
	switch w.Kind {
	case podlogs.KindDeployment:
		d, gerr := kc.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, get)
		if err = gerr; err == nil {
			state = ready(d.Status.ReadyReplicas, ptrOr(d.Spec.Replicas, 1))
		}
	case podlogs.KindStatefulSet:
		s, gerr := kc.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, get)
		if err = gerr; err == nil {
			state = ready(s.Status.ReadyReplicas, ptrOr(s.Spec.Replicas, 1))
		}
	case podlogs.KindDaemonSet:
		d, gerr := kc.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, get)
		if err = gerr; err == nil {
			state = ready(d.Status.NumberReady, d.Status.DesiredNumberScheduled)
		}
	case podlogs.KindJob:
		j, gerr := kc.BatchV1().Jobs(w.Namespace).Get(ctx, w.Name, get)
		if err = gerr; err == nil {
			state = fmt.Sprintf("%d active", j.Status.Active)
			for _, c := range j.Status.Conditions {
				if c.Status == "True" && (c.Type == "Complete" || c.Type == "Failed") {
					state = strings.ToLower(string(c.Type))
				}
			}
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return "missing"
	case err != nil:
		return "unknown: " + err.Error()
	}
	return state
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
