package diagnose

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// logTail is how many of a container run's last lines the bundle keeps: enough for the
// failure, bounded for a container that logs without pause.
const logTail = 5000

// logWait bounds the read of one container's log, so a node that does not answer costs the
// bundle seconds, not its whole time.
const logWait = 5 * time.Second

// ClusterSecrets learns the values of the Secrets of the namespaces given (nil: all of them), so
// no entry written after can show one (Bundle.Secret). It reports whether every namespace's
// Secrets could be read; the container logs are collected only then.
func ClusterSecrets(ctx context.Context, b *Bundle, kc kubernetes.Interface, namespaces []string) bool {
	known := true
	for _, ns := range scopes(namespaces) {
		list, err := kc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			known = false
			b.Missing("container logs", fmt.Errorf("the Secrets of %s, which the logs are redacted against, cannot be read: %w", scopeName(ns), err))
			continue
		}
		for _, s := range list.Items {
			for _, v := range s.Data {
				b.Secret(string(v))
			}
			for _, v := range s.StringData {
				b.Secret(v)
			}
		}
	}
	return known
}

// Cluster writes the cluster's side of the bundle for the namespaces given (nil: all of them):
// the Events, each Pod's status and, withLogs, each container's log (and the previous run's, for
// a container that restarted). Call ClusterSecrets first.
func Cluster(ctx context.Context, b *Bundle, kc kubernetes.Interface, namespaces []string, withLogs bool) {
	for _, ns := range scopes(namespaces) {
		events(ctx, b, kc, ns)
	}
	for _, ns := range scopes(namespaces) {
		pods(ctx, b, kc, ns, withLogs)
	}
}

func scopes(namespaces []string) []string {
	if namespaces == nil {
		return []string{metav1.NamespaceAll}
	}
	return namespaces
}

func scopeName(ns string) string {
	if ns == metav1.NamespaceAll {
		return "all namespaces"
	}
	return "namespace " + ns
}

// event is one Event as the bundle shows it: `kubectl get events` columns, and the message.
type event struct {
	LastSeen  time.Time `json:"lastSeen"`
	Namespace string    `json:"namespace"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Object    string    `json:"object"`
	Count     int32     `json:"count,omitempty"`
	Source    string    `json:"source,omitempty"`
	Message   string    `json:"message"`
}

func events(ctx context.Context, b *Bundle, kc kubernetes.Interface, ns string) {
	name := "kubernetes/events.yaml"
	if ns != metav1.NamespaceAll {
		name = "kubernetes/" + ns + "/events.yaml"
	}
	list, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Missing(name, fmt.Errorf("list the Events of %s: %w", scopeName(ns), err))
		return
	}
	out := make([]event, 0, len(list.Items))
	for _, e := range list.Items {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		src := e.Source.Component
		if src == "" {
			src = e.ReportingController
		}
		out = append(out, event{
			LastSeen: last, Namespace: e.Namespace, Type: e.Type, Reason: e.Reason, Count: e.Count, Source: src,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, Message: e.Message,
		})
	}
	slices.SortStableFunc(out, func(x, y event) int { return x.LastSeen.Compare(y.LastSeen) })
	b.AddYAML(name, out)
}

// podStatus is a Pod as the bundle shows it: where it runs and its status, never its spec
// (which can hold environment values).
type podStatus struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Node      string           `json:"node,omitempty"`
	Owners    []string         `json:"owners,omitempty"`
	Status    corev1.PodStatus `json:"status"`
}

func pods(ctx context.Context, b *Bundle, kc kubernetes.Interface, ns string, withLogs bool) {
	list, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Missing("kubernetes/pods", fmt.Errorf("list the Pods of %s: %w", scopeName(ns), err))
		return
	}
	for _, p := range list.Items {
		dir := "kubernetes/" + p.Namespace + "/pods/" + p.Name
		ps := podStatus{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Status: p.Status}
		for _, o := range p.OwnerReferences {
			ps.Owners = append(ps.Owners, o.Kind+"/"+o.Name)
		}
		b.AddYAML(dir+"/status.yaml", ps)
		if !withLogs {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				containerLog(ctx, b, kc, &p, cs.Name, false, dir+"/"+cs.Name+".log")
			}
			if cs.RestartCount > 0 {
				containerLog(ctx, b, kc, &p, cs.Name, true, dir+"/"+cs.Name+".previous.log")
			}
		}
	}
}

func containerLog(ctx context.Context, b *Bundle, kc kubernetes.Interface, p *corev1.Pod, container string, previous bool, name string) {
	ctx, cancel := context.WithTimeout(ctx, logWait)
	defer cancel()
	tail := int64(logTail)
	rc, err := kc.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &tail, Timestamps: true}).Stream(ctx)
	if err != nil {
		b.Missing(name, fmt.Errorf("read the log of Pod %s/%s container %s: %w", p.Namespace, p.Name, container, err))
		return
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		b.Missing(name, fmt.Errorf("read the log of Pod %s/%s container %s: %w", p.Namespace, p.Name, container, err))
		if len(data) == 0 {
			return
		}
	}
	b.Add(name, data)
}

// releaseStatus is a Helm release as `helm status` shows it, with the objects its manifest
// holds by kind and name: never its values or manifests, which hold the chart's Secrets.
type releaseStatus struct {
	Name         string    `json:"name"`
	Namespace    string    `json:"namespace"`
	Revision     int       `json:"revision"`
	Status       string    `json:"status"`
	Description  string    `json:"description,omitempty"`
	Chart        string    `json:"chart,omitempty"`
	AppVersion   string    `json:"appVersion,omitempty"`
	FirstDeploy  time.Time `json:"firstDeployed,omitzero"`
	LastDeployed time.Time `json:"lastDeployed,omitzero"`
	Objects      []string  `json:"objects,omitempty"`
	Hooks        []string  `json:"hooks,omitempty"`
}

// HelmRelease writes one release's status; rel nil says the release does not exist.
func HelmRelease(b *Bundle, namespace, name string, rel *release.Release) {
	entry := "helm/" + namespace + "/" + name + ".yaml"
	st := releaseStatus{Name: name, Namespace: namespace, Status: "not found"}
	if rel != nil {
		st.Revision = rel.Version
		if rel.Info != nil {
			st.Status, st.Description = string(rel.Info.Status), rel.Info.Description
			st.FirstDeploy, st.LastDeployed = rel.Info.FirstDeployed.Time, rel.Info.LastDeployed.Time
		}
		if rel.Chart != nil && rel.Chart.Metadata != nil {
			st.Chart = rel.Chart.Metadata.Name + "-" + rel.Chart.Metadata.Version
			st.AppVersion = rel.Chart.Metadata.AppVersion
		}
		for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
			st.Objects = append(st.Objects, objectName(doc))
		}
		slices.Sort(st.Objects)
		for _, h := range rel.Hooks {
			last := ""
			if h.LastRun.Phase != "" {
				last = " (last run " + string(h.LastRun.Phase) + ")"
			}
			st.Hooks = append(st.Hooks, h.Kind+"/"+h.Name+last)
		}
	}
	b.AddYAML(entry, st)
}

// objectName is "Kind namespace/name" of one manifest document.
func objectName(doc string) string {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal([]byte(doc), &head) != nil {
		return "(a document that does not parse)"
	}
	if head.Metadata.Namespace != "" {
		return head.Kind + " " + head.Metadata.Namespace + "/" + head.Metadata.Name
	}
	return head.Kind + " " + head.Metadata.Name
}
